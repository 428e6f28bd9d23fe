"""An agent served over A2A, and a remote A2A agent as a tool (the ``a2a-sdk`` package): see
:func:`~loopkit.interop.a2a.to_a2a`, :class:`~loopkit.interop.a2a.A2ATool` and
``docs/interop.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit._lazy import lazy_exports

__all__ = [
    "A2ATool",
    "LoopkitAgentExecutor",
    "SessionTaskStore",
    "agent_card",
    "to_a2a",
]

_EXPORTS: dict[str, str] = {
    "A2ATool": "loopkit.interop.a2a.tool",
    "LoopkitAgentExecutor": "loopkit.interop.a2a.server",
    "agent_card": "loopkit.interop.a2a.server",
    "to_a2a": "loopkit.interop.a2a.server",
    "SessionTaskStore": "loopkit.interop.a2a.store",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from loopkit.interop.a2a.server import LoopkitAgentExecutor, agent_card, to_a2a
    from loopkit.interop.a2a.store import SessionTaskStore
    from loopkit.interop.a2a.tool import A2ATool
