"""A2A tasks kept in loopkit sessions, so they outlive the server process.

Each task is the metadata of a session of its own (``a2a-task-{id}``: the task as the A2A JSON
of its protobuf), and one index session (``a2a-tasks``) names every task with its context. Any
session store works (:class:`~loopkit.sessions.SQLiteSession`,
:class:`~loopkit.sessions.SQLAlchemySession`, ...): the same factory that keeps the agent's
conversations keeps its tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a.server.tasks.task_store import TaskStore

from loopkit.interop.sessions import SessionFactory, open_session

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task

    from loopkit.sessions.protocol import Session

__all__ = ["INDEX_SESSION", "SessionTaskStore", "task_session_id"]

#: The session whose metadata lists every task (task id -> context id).
INDEX_SESSION = "a2a-tasks"


def task_session_id(task_id: str) -> str:
    """The session that holds task ``task_id``."""
    return f"a2a-task-{task_id}"


class SessionTaskStore(TaskStore):
    """a2a-sdk's ``TaskStore`` on loopkit sessions (see the module docs). Tasks are not
    separated by owner: serve one agent to one trust domain (put authentication in front)."""

    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions
        self._open: dict[str, Session] = {}

    async def _session(self, session_id: str) -> Session:
        session = self._open.get(session_id)
        if session is None:
            session = await open_session(self._sessions, session_id)
            if len(self._open) > 512:  # keep a bounded number open; they reopen on demand
                self._open.clear()
            self._open[session_id] = session
        return session

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Write ``task`` (then index it)."""
        from google.protobuf.json_format import MessageToDict

        data = MessageToDict(task)
        await (await self._session(task_session_id(task.id))).set_metadata({"task": data})
        await (await self._session(INDEX_SESSION)).set_metadata({task.id: task.context_id})

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The stored task, or None."""
        data = (await (await self._session(task_session_id(task_id))).get_metadata()).get("task")
        return None if data is None else _task(data)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks that match ``params``, filtered and paged as a2a-sdk's in-memory store
        does (it does the filtering and paging here, over the stored tasks)."""
        from a2a.server.tasks import InMemoryTaskStore

        index = await (await self._session(INDEX_SESSION)).get_metadata()
        page = InMemoryTaskStore()
        for task_id, context_id in index.items():
            if params.context_id and context_id != params.context_id:
                continue
            task = await self.get(task_id, context)
            if task is not None:
                await page.save(task, context)
        return await page.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the task."""
        await (await self._session(task_session_id(task_id))).clear()
        await (await self._session(INDEX_SESSION)).set_metadata({task_id: None})


def _task(data: dict[str, Any]) -> Task:
    from a2a.types.a2a_pb2 import Task
    from google.protobuf.json_format import ParseDict

    return ParseDict(data, Task())
