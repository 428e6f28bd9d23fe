"""Writers that find a fresh database at the same moment all create its tables without an error
(each with its own engine: the check-then-CREATE of one races the others, table by table)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from loopkit.sessions import SQLAlchemySession
from tests.sessions.conftest import say


def test_simultaneous_first_writers_on_a_fresh_database(tmp_path: Path) -> None:
    rounds, writers = 12, 6
    for n in range(rounds):
        url = f"sqlite:///{tmp_path / f'fresh-{n}.db'}"
        start = threading.Barrier(writers)
        errors: list[BaseException] = []

        def write(
            w: int,
            url: str = url,
            start: threading.Barrier = start,
            errors: list[BaseException] = errors,
        ) -> None:
            async def go() -> None:
                session = SQLAlchemySession(url, f"s{w}")
                start.wait()
                await session.add_messages([say("user", f"hello {w}")])
                await session.close()

            try:
                asyncio.run(go())
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [], f"round {n}: {errors[0]}"
