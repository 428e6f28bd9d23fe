"""UI automation backends: one protocol (:mod:`.protocol`), AT-SPI on Linux, UIA on Windows.

:func:`create_backend` picks one by name, by the ``LOOPKIT_UI_BACKEND`` environment variable, or
by platform. Backends are imported lazily: the Windows one is never imported on Linux.
"""

from __future__ import annotations

import os
import sys
from typing import Any

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

__all__ = [
    "BACKEND_ENV",
    "ActionResult",
    "AmbiguousElementError",
    "AppInfo",
    "AppNotFoundError",
    "ElementDisabledError",
    "ElementInfo",
    "ElementNotFoundError",
    "ElementVanishedError",
    "Expectation",
    "Locator",
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
]

BACKEND_ENV = "LOOPKIT_UI_BACKEND"
BACKENDS = ("atspi", "uia")


def default_backend_name(env: dict[str, str] | None = None) -> str:
    """``LOOPKIT_UI_BACKEND`` if set, else ``uia`` on Windows and ``atspi`` elsewhere."""
    env = dict(os.environ) if env is None else env
    chosen = env.get(BACKEND_ENV, "").strip().lower()
    if chosen:
        if chosen not in BACKENDS:
            raise UIError(f"{BACKEND_ENV}={chosen!r} is not a backend; expected one of {BACKENDS}")
        return chosen
    return "uia" if sys.platform == "win32" else "atspi"


def create_backend(name: str | None = None, **config: Any) -> UIBackend:
    """Create a backend by name (``atspi`` / ``uia``; default: :func:`default_backend_name`).

    ``config`` goes to the backend: ``app_name``, ``pid``, ``timeout``, ``attach_timeout`` ...
    """
    chosen = (name or default_backend_name()).lower()
    if chosen == "atspi":
        if sys.platform == "win32":
            raise UIError("the atspi backend needs Linux (AT-SPI over D-Bus)")
        from loopkit_ui.backends.atspi import AtspiBackend

        return AtspiBackend(**config)
    if chosen == "uia":
        if sys.platform != "win32":
            raise UIError("the uia backend needs Windows (UI Automation)")
        from loopkit_ui.backends.uia import UIABackend

        return UIABackend(**config)
    raise UIError(f"unknown UI backend {chosen!r}; expected one of {BACKENDS}")
