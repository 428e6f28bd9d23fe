"""loopkit_ui: UI automation for agents: an MCP server over AT-SPI (Linux) and UI Automation
(Windows), a headless desktop for Linux, and the backend protocol both implement.

Names are loaded on first use: ``python -m loopkit_ui.session`` and the other commands answer
(and handle a signal) before the backends and pydantic are imported, and runpy finds no command
module already imported by the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

_EXPORTS: dict[str, str] = {
    "create_backend": "loopkit_ui.backends",
    "default_backend_name": "loopkit_ui.backends",
    "ActionResult": "loopkit_ui.backends.protocol",
    "AmbiguousElementError": "loopkit_ui.backends.protocol",
    "AppInfo": "loopkit_ui.backends.protocol",
    "AppNotFoundError": "loopkit_ui.backends.protocol",
    "ElementDisabledError": "loopkit_ui.backends.protocol",
    "ElementInfo": "loopkit_ui.backends.protocol",
    "ElementNotFoundError": "loopkit_ui.backends.protocol",
    "ElementVanishedError": "loopkit_ui.backends.protocol",
    "Expectation": "loopkit_ui.backends.protocol",
    "Locator": "loopkit_ui.backends.protocol",
    "StaleRefError": "loopkit_ui.backends.protocol",
    "RefTable": "loopkit_ui.snapshot",
    "SnapshotLimits": "loopkit_ui.snapshot",
    "render_delta": "loopkit_ui.snapshot",
    "render_outline": "loopkit_ui.snapshot",
    "TreeDiff": "loopkit_ui.backends.protocol",
    "TreeNode": "loopkit_ui.backends.protocol",
    "TreeSnapshot": "loopkit_ui.backends.protocol",
    "UIBackend": "loopkit_ui.backends.protocol",
    "UIError": "loopkit_ui.backends.protocol",
    "UITimeoutError": "loopkit_ui.backends.protocol",
    "WaitResult": "loopkit_ui.backends.protocol",
    "WindowInfo": "loopkit_ui.backends.protocol",
    "WindowReport": "loopkit_ui.backends.protocol",
    "diff_trees": "loopkit_ui.backends.diff",
    "DesktopError": "loopkit_ui.headless_desktop",
    "HeadlessDesktop": "loopkit_ui.headless_desktop",
}

if TYPE_CHECKING:
    from loopkit_ui.backends import create_backend, default_backend_name
    from loopkit_ui.backends.diff import diff_trees
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
        StaleRefError,
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
    from loopkit_ui.headless_desktop import DesktopError, HeadlessDesktop
    from loopkit_ui.snapshot import RefTable, SnapshotLimits, render_delta, render_outline
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
    "RefTable",
    "SnapshotLimits",
    "StaleRefError",
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
    "render_delta",
    "render_outline",
]
