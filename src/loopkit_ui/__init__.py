"""loopkit_ui: UI automation for agents: an MCP server over AT-SPI (Linux) and UI Automation
(Windows), a headless desktop for Linux, and the backend protocol both implement."""

from __future__ import annotations

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
