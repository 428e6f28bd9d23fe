"""A2A with the official ``a2a-sdk`` client against ``to_a2a`` in a server process: the agent
card, a task sent and streamed (status updates per round, the output artifact, completed), the
task read again after a SIGKILL and restart of the server (tasks live in loopkit sessions on
SQLite), the context continuing as one conversation; and ``A2ATool``: a loopkit agent calling
the remote agent as a tool."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, new_text_message
from a2a.types.a2a_pb2 import GetTaskRequest, ListTasksRequest, Role, SendMessageRequest, TaskState

from loopkit import Agent, ScriptedChatClient
from loopkit.interop.a2a import A2ATool

from .conftest import Server

pytestmark = pytest.mark.integration

FACTORY = "tests.interop.agents:a2a_app"


async def _client(url: str, http: httpx.AsyncClient) -> Any:
    card = await A2ACardResolver(http, url).get_agent_card()
    return card, ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)


async def _send(client: Any, text: str, context_id: str) -> list[Any]:
    message = new_text_message(text, context_id=context_id, role=Role.ROLE_USER)
    return [r async for r in client.send_message(SendMessageRequest(message=message))]


async def test_a_task_streams_and_survives_a_restart(server_factory: type[Server]) -> None:
    server = server_factory(FACTORY)
    url = server.start()
    async with httpx.AsyncClient(timeout=60) as http:
        card, client = await _client(url, http)
        assert card.name == "release"
        assert card.description.startswith("You release software")
        assert [s.name for s in card.skills] == ["_check_build"]
        assert card.capabilities.streaming

        context = str(uuid.uuid4())
        stream = await _send(client, "Release version 2", context)
        kinds = [r.WhichOneof("payload") for r in stream]
        assert kinds[0] == "task" and "status_update" in kinds and "artifact_update" in kinds
        states = [r.status_update.status.state for r in stream if r.HasField("status_update")]
        assert states[0] == TaskState.TASK_STATE_WORKING
        assert states[-1] == TaskState.TASK_STATE_COMPLETED
        notes = [r.status_update.status.message.parts[0].text for r in stream
                 if r.HasField("status_update") and r.status_update.status.message.parts]  # fmt: skip
        assert any('[calling _check_build {"version": "2"}]' in n for n in notes)
        artifact = next(r.artifact_update.artifact for r in stream if r.HasField("artifact_update"))
        assert get_artifact_text(artifact) == 'Build checked: {"version": "2", "status": "green"}'
        task_id = stream[0].task.id
        for r in stream:  # a2a-sdk's client parses the timestamps the server wrote (aware)
            if r.HasField("status_update"):
                assert r.status_update.status.timestamp.seconds > 0
        before = await client.get_task(GetTaskRequest(id=task_id))
        await client.close()

    server.kill()
    url = server.start()
    async with httpx.AsyncClient(timeout=60) as http:
        _, client = await _client(url, http)
        after = await client.get_task(GetTaskRequest(id=task_id))
        assert after.status.state == TaskState.TASK_STATE_COMPLETED
        assert after == before
        listed = await client.list_tasks(ListTasksRequest(context_id=context))
        assert [t.id for t in listed.tasks] == [task_id]
        # The context is one conversation, stored: it goes on after the restart.
        again = await _send(client, "What did I ask?", context)
        done = [r for r in again if r.HasField("artifact_update")]
        assert (
            get_artifact_text(done[0].artifact_update.artifact)
            == "Earlier you asked: Release version 2"
        )
        await client.close()


async def test_a2a_tool_calls_a_remote_agent(server_factory: type[Server]) -> None:
    url = server_factory(FACTORY).start()
    remote = await A2ATool.connect(url)
    assert remote.name == "release" and remote.description.startswith("You release software")
    model = ScriptedChatClient([
        {"calls": [{"name": "release", "arguments": {"task": "Release version 2"},
                    "expect": {"contains": "Build checked"}}]},
        {"text": "The remote agent checked the build."},
    ])  # fmt: skip
    agent = Agent(model, tools=[remote])
    result = await agent.run("Ask the release agent")
    assert result.output == "The remote agent checked the build."
    [tool_message] = [m for m in result.new_messages if m.role == "tool"]
    assert tool_message.contents[0].result == 'Build checked: {"version": "2", "status": "green"}'


async def test_a2a_tool_reports_an_unreachable_agent_to_the_model(tmp_path: Path) -> None:
    tool = A2ATool("http://127.0.0.1:9", name="gone", seconds=5)
    from loopkit.abstractions.tools import ToolError

    with pytest.raises(ToolError, match=r"the A2A agent at http://127\.0\.0\.1:9 failed"):
        await tool.invoke({"task": "anything"})
    with pytest.raises(ToolError, match="needs a task"):
        await tool.invoke({"task": " "})
