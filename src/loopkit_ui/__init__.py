"""loopkit_ui: UI automation for agents: an MCP server over AT-SPI (Linux) and UI Automation
(Windows), a headless desktop for Linux, and the backend protocol both implement."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopkit_ui.backends import create_backend, default_backend_name
from loopkit_ui.backends.protocol import (
    ActionResult,
    AmbiguousElementError,
    AppInfo,
    AppNotFoundError,
    ElementDisabledError,
    ElementInfo,
    ElementNotFoundError,
    ElementVanishedError,
    Expectation,
    Locator,
    TreeDiff,
    TreeNode,
    TreeSnapshot,
    UIBackend,
    UIError,
    UITimeoutError,
    WaitResult,
    WindowInfo,
    WindowReport,
)
from loopkit_ui.diff import diff_trees

if TYPE_CHECKING:
    from loopkit_ui.session import DesktopError, HeadlessDesktop

__all__ = [
    "ActionResult",
    "AmbiguousElementError",
    "AppInfo",
    "AppNotFoundError",
    "DesktopError",
    "ElementDisabledError",
    "ElementInfo",
    "ElementNotFoundError",
    "ElementVanishedError",
    "Expectation",
    "HeadlessDesktop",
    "Locator",
    "TreeDiff",
    "TreeNode",
    "TreeSnapshot",
    "UIBackend",
    "UIError",
    "UITimeoutError",
    "WaitResult",
    "WindowInfo",
    "WindowReport",
    "create_backend",
    "default_backend_name",
    "diff_trees",
]


def __getattr__(name: str) -> Any:
    # The session module is loaded on first use: ``python -m loopkit_ui.session`` must not find
    # it already imported by the package (runpy warns about that).
    if name in ("DesktopError", "HeadlessDesktop"):
        from loopkit_ui import session

        return getattr(session, name)
    raise AttributeError(f"module 'loopkit_ui' has no attribute {name!r}")
