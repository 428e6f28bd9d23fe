"""Develop, then "Test this change", in a real browser (Playwright, Debian's chromium).

A card is developed from the board (a real worker in its own headless desktop, the scripted
model, the real app, UI server and tools); on the done run's page "Test this change" queues the
test role in that run's repository: the test run passes there and the card ends Done.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.board.helpers import CARD, PASSWORD, copy_card, running_board, start_worker, stop_worker
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
playwright = import_or_unavailable("playwright.sync_api", install="the dev extra")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.ui,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]


def wait_for_state(page: object, wanted: str, within: float = 240) -> None:
    """Wait until the run page says the run ended ``wanted`` (the page reloads at the end)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = page.get_attribute("#run-state", "data-state")  # type: ignore[attr-defined]
        except playwright.Error:
            state = None
        if state == wanted:
            return
        assert state not in ("failed", "cancelled"), f"the run ended {state}"
        time.sleep(0.3)
    raise AssertionError(f"the run did not end {wanted} within {within:g} s")


def test_develop_then_test_this_change_from_the_board(tmp_path: Path) -> None:
    card = copy_card(tmp_path / "cards")
    worker = start_worker(tmp_path)
    try:
        with running_board(tmp_path) as board, playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(board.url + "/login")
            page.fill("input[name=name]", "ann")
            page.fill("input[name=password]", PASSWORD)
            page.click("#login")
            page.wait_for_selector(".columns")
            page.goto(f"{board.url}/cards/{CARD}.md")
            page.select_option("#start-run select[name=role]", "develop")
            page.click("#start-run button[type=submit]")
            page.wait_for_selector("#run-state")
            develop_url = page.url.split("?")[0]
            develop_id = develop_url.rsplit("/", 1)[1]
            wait_for_state(page, "done")
            page.reload()
            repo = page.inner_text("#run-repo code")
            assert Path(repo).is_dir() and repo.startswith(str(tmp_path / "runs"))
            assert "state: Done" in card.read_text()

            page.click("#test-change button[type=submit]")
            page.wait_for_selector("#run-state")
            test_url = page.url.split("?")[0]
            assert test_url != develop_url
            assert "role test" in page.inner_text("main")
            wait_for_state(page, "done")
            page.reload()
            # The test run worked in the develop run's repository and follows it.
            assert page.inner_text("#run-repo code") == repo
            assert page.get_attribute("#run-repo a", "href") == f"/runs/{develop_id}"
            assert "state: Done" in card.read_text()
            # The repository holds the developer's commit and the tester's after it.
            assert re.search(r"card: Deleting an item should ask first \(test\)", page.content())
            browser.close()
    finally:
        output = stop_worker(worker)
    assert output.count(": done") >= 2, output


def test_develop_then_test_from_the_card_page(tmp_path: Path) -> None:
    """The card page's "then test it" checkbox beside the role: one click runs the pipeline
    (develop, then test in its repository); the card is Done only once the tester passed."""
    card = copy_card(tmp_path / "cards")
    worker = start_worker(tmp_path)
    try:
        with running_board(tmp_path) as board, playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(board.url + "/login")
            page.fill("input[name=name]", "ann")
            page.fill("input[name=password]", PASSWORD)
            page.click("#login")
            page.wait_for_selector(".columns")
            page.goto(f"{board.url}/cards/{CARD}.md")
            page.select_option("#start-run select[name=role]", "develop")
            page.check("#start-run input[name=then]")
            page.click("#start-run button[type=submit]")
            page.wait_for_selector("#run-state")
            develop_id = page.url.split("?")[0].rsplit("/", 1)[1]
            wait_for_state(page, "done")
            assert "state: In Test" in card.read_text() or "state: Done" in card.read_text()
            # The develop run names the test run the pipeline queued after it.
            deadline = time.monotonic() + 30
            while "then run" not in page.inner_text("#run-repo"):
                assert time.monotonic() < deadline, page.inner_text("#run-repo")
                time.sleep(0.3)
                page.reload()
            page.click("#run-repo a:last-child")
            page.wait_for_selector("#run-state")
            assert "role test" in page.inner_text("main")
            wait_for_state(page, "done")
            page.reload()
            assert page.get_attribute("#run-repo a", "href") == f"/runs/{develop_id}"
            assert "state: Done" in card.read_text()
            browser.close()
    finally:
        output = stop_worker(worker)
    assert output.count(": done") >= 2, output
