"""The board page with 500 cards: server time per request, beside reading the cards alone.

The work: ``GET /`` of the web board (``loopkit_board``) for a folder of 500 card files (about
400 bytes each; 1 in 50 unparseable, shown with its error), through the whole server stack in
process (Starlette, the login/CSRF gate checking a signed cookie, the card listing, the Jinja2
page), over httpx's ASGI transport: no socket, so the time is the server's own. The goal is
100 ms or less (issue 13).

| row | what runs |
|---|---|
| board, warm | ``GET /``: the folder listed again (500 ``stat`` calls; cards unchanged since the last request come from the cache), the queued and running runs read (one query of the durable runs' SQLite database) and the page rendered |
| board, cold | the same, the first request after a start: every card read and parsed |
| baseline: parse 500 cards | ``loopkit.cards.card.Card.load`` on each file, nothing else: the demo's card code, what a board without a cache pays before rendering anything |

Each row runs once to warm up, then ``REPEATS`` times, interleaved; the table shows the median
(min, max) per request and each row's ratio to the baseline. Checked in every run: the page is
200 and names every card (and the unparseable ones' errors). Speed is printed, never asserted.
Run: ``.venv/bin/python -m pytest bench/test_board_bench.py -s -q``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

pytest.importorskip("starlette")

CARDS = 500
REPEATS = 15
BODY = (
    "When the user deletes an item, ask first.\n\n**Acceptance criteria**\n"
    "- A dialog names the item\n- No keeps it\n- Yes removes it and updates the totals\n"
)


def make_cards(folder: Path) -> None:
    states = ["New", "In Work", "Done", "Failed"]
    for i in range(CARDS):
        if i % 50 == 49:
            text = f"---\ntitle: [broken {i}\n---\n{BODY}"
        else:
            text = (
                f"---\ntitle: Card number {i}\nstate: {states[i % 4]}\ncategory: Bug\n---\n{BODY}"
            )
        (folder / f"card-{i:03}.md").write_text(text, encoding="utf-8")


def board_app(service: object, data: Path) -> tuple[object, str]:
    from loopkit_board.app import create_app
    from loopkit_board.auth import Accounts, Signer

    app = create_app(service, Accounts({}, {}))  # type: ignore[arg-type]
    cookie = Signer(data).sign(Signer.new_session("ann"))
    return app, cookie


async def timed(fn: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def test_board_page_with_500_cards(tmp_path: Path) -> None:
    import httpx

    from loopkit.cards.card import Card
    from loopkit.errors import CardError

    cards = tmp_path / "cards"
    cards.mkdir()
    make_cards(cards)

    from loopkit.cards.config import RunnerConfig
    from loopkit_board.cards import CardFolder
    from loopkit_board.service import BoardService

    data = tmp_path / "data"

    async def main() -> dict[str, list[float]]:
        # one durable runtime a process: the service is started once (as the app's lifespan
        # does); the board page asks it for the cards' queued and running runs
        service = BoardService(cards, config=RunnerConfig(runs_dir=data), data_dir=data)
        await service.start()
        app, cookie = board_app(service, data)
        warm = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),  # type: ignore[arg-type]
            base_url="http://127.0.0.1",
            cookies={"loopkit_board": cookie},
        )

        async def get(client: httpx.AsyncClient) -> None:
            page = await client.get("/")
            assert page.status_code == 200
            assert page.text.count('class="card') == CARDS
            assert page.text.count("not valid YAML") == CARDS // 50

        async def board_warm() -> None:
            await get(warm)

        async def board_cold() -> None:
            service.cards = CardFolder(cards)  # a fresh start: nothing cached
            fresh, fresh_cookie = board_app(service, data)
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=fresh),  # type: ignore[arg-type]
                base_url="http://127.0.0.1",
                cookies={"loopkit_board": fresh_cookie},
            ) as client:
                await get(client)

        async def baseline() -> None:
            parsed = 0
            for path in sorted(cards.iterdir()):
                try:
                    Card.load(path)
                    parsed += 1
                except CardError:
                    pass
            assert parsed == CARDS - CARDS // 50

        rows = {
            "board, warm": board_warm,
            "board, cold (first request)": board_cold,
            "baseline: parse 500 cards": baseline,
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        for fn in rows.values():
            await fn()  # warm-up
        for _ in range(REPEATS):
            for name, fn in rows.items():
                times[name].append(await timed(fn))
        await warm.aclose()
        await service.stop()
        return times

    times = asyncio.run(main())
    base = statistics.median(times["baseline: parse 500 cards"])
    print(
        f"\nGET / with {CARDS} cards, server time per request (median of {REPEATS}; goal ≤ 100 ms)"
    )
    print(f"{'row':32} {'median ms':>10} {'min':>8} {'max':>8} {'× baseline':>11}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:32} {median * 1000:10.1f} {min(values) * 1000:8.1f} "
            f"{max(values) * 1000:8.1f} {median / base:11.2f}"
        )
