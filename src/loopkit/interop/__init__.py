"""loopkit agents over open protocols, with the official packages of each (the ``interop``
extra: ``pip install 'loopkit[interop]'``).

- :mod:`loopkit.interop.ag_ui`: :class:`~loopkit.interop.ag_ui.AGUIApp`, an agent served to
  front-ends over AG-UI (streamed text and tool calls, frontend tools, approvals as interrupts,
  threads as sessions, shared state).
- :mod:`loopkit.interop.a2a`: :func:`~loopkit.interop.a2a.to_a2a`, an agent served to other
  agents over A2A (agent card, tasks, streaming, tasks kept in sessions), and
  :class:`~loopkit.interop.a2a.A2ATool`, a remote A2A agent as a tool.
- :mod:`loopkit.interop.mcp_server`: an agent as an MCP tool
  (``python -m loopkit.interop.mcp_server module:agent``).

Nothing here is imported by ``import loopkit``; the protocol packages load when a name that
needs them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit._lazy import lazy_exports

__all__ = [
    "A2ATool",
    "AGUIApp",
    "FrontEndApprover",
    "agent_mcp_server",
    "current_state",
    "to_a2a",
]

_EXPORTS: dict[str, str] = {
    "AGUIApp": "loopkit.interop.ag_ui.app",
    "FrontEndApprover": "loopkit.interop.ag_ui.runs",
    "current_state": "loopkit.interop.ag_ui.runs",
    "A2ATool": "loopkit.interop.a2a.tool",
    "to_a2a": "loopkit.interop.a2a.server",
    "agent_mcp_server": "loopkit.interop.mcp_server.server",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from loopkit.interop.a2a.server import to_a2a
    from loopkit.interop.a2a.tool import A2ATool
    from loopkit.interop.ag_ui.app import AGUIApp
    from loopkit.interop.ag_ui.runs import FrontEndApprover, current_state
    from loopkit.interop.mcp_server.server import agent_mcp_server
