"""A second process for the session tests: opens a session and runs a JSON program.

Reads ``{"open": <Python expression>, "ops": [[op, *args], ...], "pause_in_commit_of": k}``
from the JSON file named by its argument. With ``"go_file": path`` it prints ``ready`` once connected and starts when the file exists
(several writers start together); ``"gap_s": s`` waits that long between ops (so writers that
start a few milliseconds apart still overlap on a busy machine). Ops: ``["add", [message, ...]]``, ``["pop"]``, ``["get", limit]``,
``["set_metadata", {...}]``, ``["get_metadata"]``. Prints ``{"done": i}`` after op ``i`` and
``{"results": [...]}`` at the end.

``pause_in_commit_of: k`` stops op ``k`` (an ``add``) inside its transaction, just before the
commit, and prints ``paused``: the test then kills this process with SIGKILL. The hook is the
only thing added to the real store: SQLite's statement trace (``COMMIT``), SQLAlchemy's
``commit`` event.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
from typing import Any

from loopkit.abstractions.content import ChatMessage
from loopkit.sessions import SQLiteSession  # noqa: F401 - named by the program's "open"

try:
    from loopkit.sessions import SQLAlchemySession
except ImportError:  # the sql extra is missing; only SQLite programs run
    SQLAlchemySession = None  # type: ignore[assignment,misc]

pausing = {"now": False}


def pause_here() -> None:
    if pausing["now"]:
        print("paused", flush=True)
        time.sleep(3600)  # SIGKILL arrives here, with the batch written but not committed


def trace_sqlite_commits() -> None:
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: pause_here() if sql.strip() == "COMMIT" else None)
        return conn

    sqlite3.connect = connect  # type: ignore[assignment]


def wait_for(path: str) -> None:
    """Block until ``path`` exists (this process has nothing else to do meanwhile)."""
    while not os.path.exists(path):
        time.sleep(0.001)


async def main(program: dict[str, Any]) -> None:
    pause_at = program.get("pause_in_commit_of")
    if pause_at is not None and program["open"].startswith("SQLiteSession"):
        trace_sqlite_commits()
    session = eval(program["open"])  # the test's own expression: SQLiteSession(...) etc.
    if pause_at is not None and hasattr(session, "engine"):
        from sqlalchemy import event

        event.listen(session.engine, "commit", lambda conn: pause_here())
    if "go_file" in program:  # start together with the other writers
        await session.get_messages(1)  # connected, tables created
        print("ready", flush=True)
        wait_for(program["go_file"])
    results: list[Any] = []
    for index, (op, *args) in enumerate(program["ops"]):
        pausing["now"] = index == pause_at
        if op == "add":
            await session.add_messages([ChatMessage.model_validate(m) for m in args[0]])
            results.append(None)
        elif op == "pop":
            popped = await session.pop_message()
            results.append(popped.model_dump(mode="json") if popped else None)
        elif op == "get":
            got = await session.get_messages(args[0])
            results.append([m.model_dump(mode="json") for m in got])
        elif op == "set_metadata":
            await session.set_metadata(args[0])
            results.append(None)
        elif op == "get_metadata":
            results.append(await session.get_metadata())
        else:
            raise SystemExit(f"unknown op {op!r}")
        print(json.dumps({"done": index}), flush=True)
        if program.get("gap_s"):
            await asyncio.sleep(program["gap_s"])
    await session.close()
    print(json.dumps({"results": results}), flush=True)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        asyncio.run(main(json.load(file)))
