"""``A2ATool``: a remote A2A agent as a tool of a loopkit agent (the counterpart of
:meth:`Agent.as_tool <loopkit.agents.Agent.as_tool>` across processes and frameworks), through
the official ``a2a-sdk`` client."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from loopkit.abstractions.tools import ToolError

if TYPE_CHECKING:
    import httpx
    from a2a.types.a2a_pb2 import AgentCard, Task

__all__ = ["A2ATool"]


class A2ATool:
    """A :class:`~loopkit.abstractions.tools.Tool` that sends the ``task`` the calling model
    writes to the A2A agent at ``url`` and returns its output (the task's artifacts as text;
    JSON data as JSON). Each call is a new A2A task in a new context: the remote agent does not
    see this conversation.

    ``name`` and ``description`` default to the remote agent card's (build it with
    ``await A2ATool.connect(url)`` to read the card first; the constructor alone reads it on
    the first call and needs ``name``). ``seconds``: how long one HTTP request may take. A
    task that ends failed, rejected or cancelled is a
    :class:`~loopkit.abstractions.tools.ToolError` with the remote agent's words, so the model
    can go on without it.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str,
        description: str | None = None,
        card: AgentCard | None = None,
        http_client: httpx.AsyncClient | None = None,
        seconds: float = 300.0,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be the A2A agent's http(s) address, got {url!r}")
        self.url = url
        self.name = name
        self.description = description or (
            card.description if card is not None else f"Ask the remote {name} agent to do a task."
        )
        self.card = card
        self._http = http_client
        self.seconds = seconds
        self._parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The task, with everything needed to do it: the remote "
                    "agent does not see this conversation.",
                }
            },
            "required": ["task"],
            "additionalProperties": False,
        }

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        seconds: float = 300.0,
    ) -> A2ATool:
        """Read the agent card at ``url`` and build the tool from it (its name, made a valid
        tool name, and its description)."""
        card = await _fetch_card(url, http_client, seconds)
        tool_name = name or _tool_name(card.name)
        return cls(url, name=tool_name, description=description, card=card,
                   http_client=http_client, seconds=seconds)  # fmt: skip

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments: one string, ``task``."""
        return self._parameters

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """Send ``arguments["task"]`` as a new A2A task; its output as text."""
        import httpx
        from a2a.client import ClientConfig, ClientFactory
        from a2a.helpers import new_text_message
        from a2a.types.a2a_pb2 import Role, SendMessageRequest

        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip():
            raise ToolError(f"{self.name} needs a task: a non-empty string in the 'task' argument")
        try:
            if self.card is None:
                self.card = await _fetch_card(self.url, self._http, self.seconds)
            http = self._http or httpx.AsyncClient(timeout=self.seconds)
            try:
                client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(
                    self.card
                )
                message = new_text_message(task, context_id=str(uuid.uuid4()), role=Role.ROLE_USER)
                final: Task | None = None
                async for response in client.send_message(SendMessageRequest(message=message)):
                    if response.HasField("task"):
                        final = response.task
                    elif response.HasField("message"):
                        return _message_text(response.message)
                if final is None or not _terminal(final):
                    final = await _wait_for(client, final)
            finally:
                if self._http is None:
                    await http.aclose()
        except ToolError:
            raise
        except Exception as e:  # the remote agent is down, answered garbage, ...
            raise ToolError(f"{self.name}: the A2A agent at {self.url} failed: {e}") from e
        return _outcome(self.name, final)

    def __repr__(self) -> str:
        return f"A2ATool({self.name!r}, url={self.url!r})"


async def _fetch_card(url: str, http: httpx.AsyncClient | None, seconds: float) -> AgentCard:
    import httpx
    from a2a.client import A2ACardResolver

    own = http is None
    client = http or httpx.AsyncClient(timeout=seconds)
    try:
        return await A2ACardResolver(client, url).get_agent_card()
    finally:
        if own:
            await client.aclose()


async def _wait_for(client: Any, task: Task | None) -> Task:
    """The task once it has ended (the stream ended before: a server that does not stream)."""
    import asyncio

    from a2a.types.a2a_pb2 import GetTaskRequest

    if task is None:
        raise ToolError("the A2A agent answered with neither a task nor a message")
    while not _terminal(task):
        await asyncio.sleep(0.2)
        task = await client.get_task(GetTaskRequest(id=task.id))
    return task


def _terminal(task: Task) -> bool:
    from a2a.types.a2a_pb2 import TaskState

    return task.status.state in (
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    )


def _outcome(name: str, task: Task) -> str:
    from a2a.types.a2a_pb2 import TaskState

    if task.status.state != TaskState.TASK_STATE_COMPLETED:
        state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower()
        said = _message_text(task.status.message) if task.status.HasField("message") else ""
        raise ToolError(f"{name}: the remote task ended {state}" + (f": {said}" if said else ""))
    texts = [_part_text(p) for a in task.artifacts for p in a.parts]
    if not texts and task.status.HasField("message"):
        texts = [_message_text(task.status.message)]
    return "\n".join(t for t in texts if t)


def _message_text(message: Any) -> str:
    return "\n".join(t for t in (_part_text(p) for p in message.parts) if t)


def _part_text(part: Any) -> str:
    import json

    from google.protobuf.json_format import MessageToDict

    if part.HasField("text"):
        return str(part.text)
    if part.HasField("data"):
        return json.dumps(MessageToDict(part.data), ensure_ascii=False, separators=(",", ":"))
    if part.HasField("url"):
        return str(part.url)
    return ""


def _tool_name(name: str) -> str:
    import re

    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:64]
    return cleaned or "remote_agent"
