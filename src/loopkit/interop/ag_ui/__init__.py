"""An agent served over AG-UI (the ``ag-ui-protocol`` package): see
:class:`~loopkit.interop.ag_ui.AGUIApp` and ``docs/interop.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit._lazy import lazy_exports

__all__ = [
    "AGUIApp",
    "EventTranslator",
    "FrontEndApprover",
    "FrontendTool",
    "SessionFactory",
    "current_state",
    "from_ag_ui_messages",
]

_EXPORTS: dict[str, str] = {
    "AGUIApp": "loopkit.interop.ag_ui.app",
    "SessionFactory": "loopkit.interop.sessions",
    "FrontEndApprover": "loopkit.interop.ag_ui.runs",
    "FrontendTool": "loopkit.interop.ag_ui.runs",
    "current_state": "loopkit.interop.ag_ui.runs",
    "EventTranslator": "loopkit.interop.ag_ui.translate",
    "from_ag_ui_messages": "loopkit.interop.ag_ui.translate",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from loopkit.interop.ag_ui.app import AGUIApp
    from loopkit.interop.ag_ui.runs import FrontEndApprover, FrontendTool, current_state
    from loopkit.interop.ag_ui.translate import EventTranslator, from_ag_ui_messages
    from loopkit.interop.sessions import SessionFactory
