"""An :class:`~loopkit.agents.Agent` served over A2A with the official ``a2a-sdk``: an agent card
built from the agent, tasks (JSON-RPC ``SendMessage``, ``SendStreamingMessage``, ``GetTask``,
``ListTasks``, ``CancelTask``), their state in loopkit sessions.

``to_a2a(agent, url=...)`` returns a Starlette application:

- ``GET /.well-known/agent-card.json``: the card: the agent's name, its instructions as the
  description (or ``description=``), one skill per tool, text in and text (or JSON, for a typed
  output) out, streaming.
- ``POST /``: JSON-RPC. A message starts a task (or continues one, with its ``taskId``); the
  task's context is a loopkit session (``a2a-{contextId}``), so messages of one context are one
  conversation. While the agent runs, each round is a ``working`` status update (its text and
  the tools it calls); the output is the task's artifact ``output``; the task ends
  ``completed`` or ``failed`` (the error in its status message).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import AgentExecutor

from loopkit.agents.events import FinalResult, RoundFinished, TextDelta, ToolCallStarted
from loopkit.errors import describe_error
from loopkit.interop.a2a.store import SessionTaskStore
from loopkit.interop.sessions import SessionFactory, memory_sessions, open_session

if TYPE_CHECKING:
    from a2a.server.agent_execution.context import RequestContext
    from a2a.server.events.event_queue_v2 import EventQueue
    from a2a.types.a2a_pb2 import AgentCard, Part
    from starlette.applications import Starlette

    from loopkit.agents.agent import Agent

__all__ = ["LoopkitAgentExecutor", "agent_card", "context_session_id", "to_a2a"]


def context_session_id(context_id: str) -> str:
    """The loopkit session that holds the conversation of A2A context ``context_id``."""
    return f"a2a-{context_id}"


def agent_card(
    agent: Agent[Any],
    url: str,
    *,
    description: str | None = None,
    version: str = "1.0.0",
) -> AgentCard:
    """The A2A agent card of ``agent`` served at ``url`` (JSON-RPC)."""
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

    text = "text/plain"
    output = text if agent.output_type is str else "application/json"
    skills = [
        AgentSkill(id=t.name, name=t.name, description=t.description or t.name, tags=["tool"])
        for t in agent.tools
    ] or [
        AgentSkill(
            id=agent.name,
            name=agent.name,
            description=description or agent.instructions or f"The {agent.name} agent.",
            tags=["agent"],
        )
    ]
    return AgentCard(
        name=agent.name,
        description=description or agent.instructions or f"The {agent.name} agent.",
        version=version,
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=[text],
        default_output_modes=[output],
        skills=skills,
    )


class LoopkitAgentExecutor(AgentExecutor):
    """a2a-sdk's ``AgentExecutor`` for a loopkit agent: one task message is one agent run in
    the context's session (see the module docs)."""

    def __init__(self, agent: Agent[Any], sessions: SessionFactory) -> None:
        self.agent = agent
        self.sessions = sessions
        self._output_adapter: Any = None

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run the agent on the message; publish the task's progress and end."""
        from a2a.helpers import new_task, new_text_message
        from a2a.server.tasks import TaskUpdater
        from a2a.types.a2a_pb2 import TaskState

        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            task = new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        prompt = context.get_user_input()
        if not prompt.strip():
            await updater.reject(
                new_text_message(
                    "the message has no text: send the task as a text part",
                    context_id=context_id,
                    task_id=task_id,
                )
            )
            return
        session = await open_session(self.sessions, context_session_id(context_id))
        said: list[str] = []
        result = None
        try:
            events = self.agent.run_stream(
                prompt, session=session, metadata={"a2a_task_id": task_id}
            )
            async for event in events:
                if isinstance(event, TextDelta):
                    said.append(event.text)
                elif isinstance(event, ToolCallStarted):
                    call = event.call
                    arguments = json.dumps(call.arguments, ensure_ascii=False)
                    said.append(f"\n[calling {call.name} {arguments}]")
                elif isinstance(event, RoundFinished):
                    if said:
                        text = "".join(said).strip()
                        note = new_text_message(text, context_id=context_id, task_id=task_id)
                        await updater.update_status(TaskState.TASK_STATE_WORKING, message=note)
                    said = []
                elif isinstance(event, FinalResult):
                    result = event.result
        except Exception as e:
            failure = f"the agent's run failed: {describe_error(e)}"
            await updater.failed(new_text_message(failure, context_id=context_id, task_id=task_id))
            return
        assert result is not None  # a stream that ends without raising ends with FinalResult
        await updater.add_artifact([self._part(result.output)], name="output", last_chunk=True)
        answer = result.text or str(result.output)
        await updater.complete(new_text_message(answer, context_id=context_id, task_id=task_id))

    def _part(self, output: Any) -> Part:
        from a2a.helpers import new_data_part, new_text_part

        if isinstance(output, str):
            return new_text_part(output)
        if self._output_adapter is None:
            from pydantic import TypeAdapter

            self._output_adapter = TypeAdapter(self.agent.output_type)
        return new_data_part(self._output_adapter.dump_python(output, mode="json"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """The SDK has cancelled the run's task; mark the task cancelled."""
        from a2a.server.tasks import TaskUpdater

        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def to_a2a(
    agent: Agent[Any],
    *,
    url: str,
    sessions: SessionFactory | None = None,
    description: str | None = None,
    version: str = "1.0.0",
    rpc_path: str = "/",
) -> Starlette:
    """``agent`` as an A2A server (a Starlette app; see the module docs). ``url`` is where
    clients reach it (written in the card); ``sessions`` opens a session by id
    (``lambda sid: SQLiteSession("a2a.db", sid)`` keeps tasks and conversations across
    restarts; by default in memory)."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from starlette.applications import Starlette

    if not url.startswith(("http://", "https://")):
        raise ValueError(f"url must be the http(s) address clients reach, got {url!r}")
    factory: SessionFactory = sessions or memory_sessions()
    card = agent_card(agent, url, description=description, version=version)
    handler = DefaultRequestHandler(
        agent_executor=LoopkitAgentExecutor(agent, factory),
        task_store=SessionTaskStore(factory),
        agent_card=card,
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_path)]
    return Starlette(routes=routes)
