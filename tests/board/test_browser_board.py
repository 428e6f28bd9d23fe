"""The board in a real browser without a worker: a team lead's day on a big board.

Playwright drives Debian's chromium (headless) against a real ``python -m loopkit_board``: 150
cards; search, filters and pages; keyboard only (the skip link, the filters, a card, a run
started and cancelled with keys); the board changing under an open page (a card file edited
on disk, runs queued and cancelled) without a reload; the "Queued (place N in the queue)." note
following the run (place 2, then 1, then gone when the run is cancelled); axe-core's WCAG 2.1
AA rules on every page.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.board.browser import CHROMIUM, assert_accessible, log_in, need_axe
from tests.board.helpers import CARD, copy_card, csrf_of, running_board
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
playwright = import_or_unavailable("playwright.sync_api", install="the dev extra")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

BODY = "Do the thing.\n\n**Acceptance criteria**\n- it is done\n"
STATES = ["New", "In Work", "Done", "Failed"]


def make_cards(folder: Path, count: int = 150) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        category = "Bug" if i % 3 == 0 else "Improvement"
        (folder / f"card-{i:03}.md").write_text(
            f"---\ntitle: Card number {i}\nstate: {STATES[i % 4]}\ncategory: {category}\n---\n"
            f"{BODY}{'The invoice total is wrong.' if i == 42 else ''}\n",
            encoding="utf-8",
        )


def no_reload_marker(page: object) -> None:
    page.evaluate("() => { window.__stillHere = 1; }")  # type: ignore[attr-defined]


def still_here(page: object) -> bool:
    return bool(page.evaluate("() => window.__stillHere === 1"))  # type: ignore[attr-defined]


def test_a_big_board_searched_filtered_paged_and_live_by_keyboard(tmp_path: Path) -> None:
    need_axe()
    cards = tmp_path / "cards"
    make_cards(cards)
    copy_card(cards)
    copy_card(cards, "total-ignores-the-discount")
    with running_board(tmp_path) as board, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(board.url + "/login")
        assert_accessible(page, "the login page")
        log_in(page, board.url)
        assert page.inner_text("h1") == "Board"
        # 152 cards, 100 a page: two pages, the counts per column are of all of them
        assert "152 of 152 cards, page 1 of 2" in page.inner_text("#card-count")
        assert page.locator("[data-card]").count() == 100
        assert_accessible(page, "the board")

        # keyboard only: the skip link first, then the search field, a query, Enter
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "skip-link"
        page.keyboard.press("Enter")
        assert page.evaluate("() => document.activeElement.id") == "main"
        page.focus("#filters input[name=q]")
        page.keyboard.type("invoice total")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"q=invoice"))
        found = [page.get_attribute(a, "data-card") for a in ["[data-card]"]]
        names = page.locator("[data-card]").evaluate_all("els => els.map(e => e.dataset.card)")
        assert "card-042.md" in names and "total-ignores-the-discount.md" in names, names
        assert len(names) == 2, (found, names)
        # filters: state and category (the select by keys), and the pages of what matched
        page.goto(board.url + "/?category=Bug&state=Done")
        names = page.locator("[data-card]").evaluate_all("els => els.map(e => e.dataset.card)")
        assert names and all(int(n[5:8]) % 3 == 0 and int(n[5:8]) % 4 == 2 for n in names)
        page.goto(board.url + "/")
        page.focus("a[rel=next]")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"page=2"))
        assert page.locator("[data-card]").count() == 52
        assert_accessible(page, "the board, page 2")

        # live: a card's file changes on disk; the open page moves it, no reload
        page.goto(board.url + "/?q=card-007")
        page.wait_for_selector(".column[data-state='Failed'] [data-card='card-007.md']")
        no_reload_marker(page)
        path = cards / "card-007.md"
        started = time.monotonic()
        path.write_text(path.read_text().replace("state: Failed", "state: Done"))
        page.wait_for_selector(
            ".column[data-state='Done'] [data-card='card-007.md']", timeout=10_000
        )
        moved = time.monotonic() - started
        assert still_here(page), "the page reloaded"
        print(f"\ncard file changed → board page redrawn: {moved * 1000:.0f} ms")

        # a run started with the keyboard: the card's page, the role, Enter
        page.goto(f"{board.url}/cards/{CARD}.md")
        assert_accessible(page, "a card's page")
        page.focus("#start-run button[type=submit]")
        page.keyboard.press("Enter")
        page.wait_for_selector("#run-state")
        first_url = page.url
        first_id = first_url.split("/runs/")[1].split("?")[0]
        # before it starts the run page names the card by its title, not its file name
        assert page.inner_text("h1") == "Deleting an item should ask first"
        assert page.inner_text("#started-by") == "ann"
        assert_accessible(page, "a queued run's page")

        # a second run queued behind it: its page says place 2 and follows the queue live
        other = context.new_page()
        other.goto(f"{board.url}/cards/total-ignores-the-discount.md")
        other.click("#start-run button[type=submit]")
        other.wait_for_selector("#message[data-queue-note]")
        assert "place 2 in the queue" in other.inner_text("#message")
        no_reload_marker(other)
        # the board page, open meanwhile, shows both runs' badges as they come
        board_page = context.new_page()
        board_page.goto(board.url + "/?q=delete")
        board_page.wait_for_selector(f"[data-card='{CARD}.md'] .run-badge")
        no_reload_marker(board_page)

        # cancel the first by keyboard: the second moves up to place 1, live, on its page
        page.goto(first_url.split("?")[0])
        page.focus("#cancel-run button")
        page.keyboard.press("Enter")
        page.wait_for_selector("#run-state[data-state='cancelled']", timeout=20_000)
        other.wait_for_function(
            "() => document.querySelector('#message') && "
            "document.querySelector('#message').textContent.includes('place 1 in the queue')",
            timeout=20_000,
        )
        assert "place 1 in the queue" in other.inner_text("#queue-place")
        # the board page drops the cancelled run's badge: its last run is shown instead
        board_page.wait_for_selector(
            f"[data-card='{CARD}.md'] [data-last-run='{first_id}']", timeout=20_000
        )
        assert "cancelled" in board_page.inner_text(f"[data-card='{CARD}.md']")
        # cancel the second from its own page: the note goes, the cancel button goes
        other.click("#cancel-run button")
        other.wait_for_selector("#run-state[data-state='cancelled']", timeout=20_000)
        assert other.locator("#message[data-queue-note]").count() == 0
        assert other.locator("#cancel-run").count() == 0
        assert_accessible(other, "a cancelled run's page")

        # the runs page: both runs, filtered by who started them and by state
        page.goto(board.url + "/runs?by=ann&state=cancelled")
        assert page.locator("#runs tbody tr[data-run]").count() == 2
        assert "ann" in page.inner_text("#runs")
        assert_accessible(page, "the runs page")
        page.goto(board.url + "/runs?by=bob")
        assert page.locator("#runs tbody tr[data-run]").count() == 0
        # the card's page lists its run with who started it
        page.goto(f"{board.url}/cards/{CARD}.md")
        row = page.inner_text(f"#card-runs tr[data-run='{first_id}']")
        assert "ann" in row and "cancelled" in row
        page.goto(board.url + "/findings")
        assert_accessible(page, "the findings page")
        browser.close()


def test_http_filters_and_pages_refuse_nothing_odd(tmp_path: Path) -> None:
    """Odd filter and page values are ignored or clamped, never an error."""
    make_cards(tmp_path / "cards", 30)
    with running_board(tmp_path) as board, board.client() as client:
        board.login(client)
        for query in ("page=0", "page=99", "page=-1", "page=1e3", "q=%00", "state=x" * 50,
                      "result=none", "by=nobody", "role=develop&result=open"):  # fmt: skip
            got = client.get(f"/?{query}")
            assert got.status_code == 200, query
            runs = client.get(f"/runs?{query}")
            assert runs.status_code == 200, query
        assert "30 of 30 cards" in client.get("/?page=99").text
        assert 'data-card="card-000.md"' in client.get("/?result=none").text
        live = client.get("/?part=live&state=Done")
        assert live.status_code == 200 and "<h1>" not in live.text and "data-card" in live.text
        assert csrf_of(client.get("/").text)
