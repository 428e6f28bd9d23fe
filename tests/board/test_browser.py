"""The board in a real browser: Playwright driving Debian's chromium, headless.

Log in, create a card, start a run (scripted model; a real ``python -m loopkit.worker`` running
the card in its own headless desktop with the real app, UI server and tools), watch the progress
arrive by server-sent events, see it end Done, open the report, ask a question in the chat and
read the streamed answer; then restart the board and find the chat again.

``LOOPKIT_BOARD_SCREENSHOTS=DIR`` keeps a screenshot of each page in DIR (docs/board/ has them).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from datetime import datetime
from pathlib import Path

import pytest

from loopkit.demo.run import bundled_transcripts
from tests.board.helpers import (
    CARD,
    CARDS,
    PASSWORD,
    running_board,
    start_worker,
    stop_worker,
)
from tests.installed import chromium_or_unavailable, import_or_unavailable

#: The round of the card's first start_app (asked about in the chat; the answer names it).
START_ROUND = next(
    n
    for n, t in enumerate(json.loads(bundled_transcripts()[CARD].read_text())["turns"], start=1)
    if "start_app" in [c["name"] for c in t.get("calls", [])]
)

import_or_unavailable("dbos", install="loopkit[durable]")
playwright = import_or_unavailable("playwright.sync_api", install="the dev extra")
CHROMIUM = chromium_or_unavailable()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.ui,
    pytest.mark.slow,
]


def shot(page: object, name: str) -> None:
    folder = os.environ.get("LOOPKIT_BOARD_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def test_a_card_from_the_board_to_done_and_a_chat_about_it(tmp_path: Path) -> None:
    body = (CARDS / f"{CARD}.md").read_text().split("---", 2)[2].lstrip("\n")
    worker = start_worker(tmp_path)
    try:
        with running_board(tmp_path) as board, playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(board.url + "/")
            assert page.url.endswith("/login")  # nothing without a login
            shot(page, "login")
            page.fill("input[name=name]", "ann")
            page.fill("input[name=password]", PASSWORD)
            page.click("#login")
            page.wait_for_selector(".columns")

            page.fill("#new-card input[name=title]", "Deleting an item should ask first")
            page.fill("#new-card input[name=name]", CARD)
            page.fill("#new-card textarea[name=body]", body)
            shot(page, "board")
            page.click("#new-card button[type=submit]")
            page.wait_for_selector("#start-run")
            assert (tmp_path / "cards" / f"{CARD}.md").is_file()
            assert page.inner_text("#card-state") == "New"
            shot(page, "card")

            page.click("#start-run button[type=submit]")
            page.wait_for_selector("#timeline li")  # queued, with its place
            first = page.locator("#timeline li").first.inner_text()
            assert "queued: place 1" in first or "state:" in first
            page.wait_for_selector("#timeline li.tool", timeout=120_000)
            early = page.locator("#timeline li").count()
            shot(page, "run-live")
            latencies = _watch_until_done(page)
            # the page reloads once at the end to show the screenshots and the diff
            page.wait_for_selector("#diff", timeout=30_000)
            page.wait_for_selector("#timeline li.end", timeout=30_000)
            late = page.locator("#timeline li").count()
            assert late > early, "the progress arrived all at once, not as it happened"
            assert page.locator("img.shot").count() >= 1
            assert "ConfirmDelete" in page.inner_text("#diff")
            assert (tmp_path / "cards" / f"{CARD}.md").read_text().count("state: Done") == 1
            shot(page, "run-done")

            with page.expect_popup() as popup:
                page.click("#report-link")
            report = popup.value
            report.wait_for_selector("#result")
            assert report.inner_text("#result") == "RESULT: done"
            assert "git_commit" in report.content()
            shot(report, "report")
            report.close()

            page.fill("#chat-form input[name=question]", f"what happened at step {START_ROUND}?")
            page.click("#chat-form button[type=submit]")
            page.wait_for_selector("#chat .a[data-done='1']", timeout=30_000)
            answer = page.inner_text("#chat .a[data-done='1']")
            assert f"At round {START_ROUND}" in answer and "start_app" in answer
            shot(page, "chat")
            run_url = page.url.split("?")[0]
            # run files: only from inside the run folder, never its repository
            shot_src = page.get_attribute("img.shot", "src")
            assert shot_src and page.request.get(board.url + shot_src).status == 200
            files = run_url + "/files/"
            for outside in ("..%2F..%2F..%2F..%2Fetc%2Fpasswd", "repo/.git/config",
                            "%2Fetc%2Fpasswd", "repo%2Finvoice_app%2Fmain_window.py"):  # fmt: skip
                assert page.request.get(files + outside).status == 404, outside
            # links the run's code could plant in its folder: a hard link into repo/, symlinks
            run_dir = next(p for p in (tmp_path / "runs").iterdir() if (p / "repo").is_dir())
            source = run_dir / "repo" / "invoice_app" / "main_window.py"
            os.link(source, run_dir / "hard.png")
            os.symlink(source, run_dir / "soft.png")
            os.symlink(run_dir / "repo", run_dir / "into-repo")
            for planted in ("hard.png", "soft.png", "into-repo/invoice_app/main_window.py"):
                assert page.request.get(files + planted).status == 404, planted

            page.goto(board.url + "/findings")
            assert page.locator("#findings").count() == 1
            page.goto(board.url + "/")
            assert page.locator(".column[data-state=Done] [data-card]").count() == 1
            shot(page, "board-done")
            browser.close()
        if latencies:  # a figure for the report, never an assertion (shared machine)
            print(
                f"\nprogress, run-log line → browser: median {statistics.median(latencies):.0f}"
                f" ms, max {max(latencies):.0f} ms over {len(latencies)} live events"
            )
        # a restarted board has the chat (the session is in a file) and goes on with it
        with running_board(tmp_path) as board, playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page()
            page.goto(board.url + "/login")
            page.fill("input[name=name]", "ann")
            page.fill("input[name=password]", PASSWORD)
            page.click("#login")
            page.wait_for_selector(".columns")
            page.goto(board.url + "/runs/" + run_url.rsplit("/", 1)[1])
            assert f"what happened at step {START_ROUND}?" in page.inner_text("#chat")
            browser.close()
    finally:
        output = stop_worker(worker)
    assert "done" in output, output


_LIVE = """() => Array.from(document.querySelectorAll('#timeline li'))
    .filter(li => li.dataset.time)
    .map(li => [li.dataset.seq, li.dataset.time, li.dataset.received, performance.timeOrigin])"""


def _watch_until_done(page: object) -> list[float]:
    """Wait for the run to end Done, noting for each event seen live how long it took from the
    run's log line to this page (ms)."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            rows = page.evaluate(_LIVE)  # type: ignore[attr-defined]
            state = page.get_attribute("#run-state", "data-state")  # type: ignore[attr-defined]
        except playwright.Error:  # the page reloads itself at the end
            rows, state = [], None
        for seq, stamp, received, opened in rows:
            written = datetime.fromisoformat(stamp).timestamp() * 1000
            if written >= float(opened):  # written while this page was open: seen live
                seen.setdefault(seq, float(received) - written)
        if state == "done":
            return list(seen.values())
        assert state not in ("failed", "cancelled"), f"the run ended {state}"
        time.sleep(0.3)
    raise AssertionError("the run did not end Done within 180 s")
