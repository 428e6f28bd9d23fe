"""Logging in with a real browser: Playwright driving Debian's chromium (headless).

Two login tabs both log in; a login that ends while a card is being edited keeps the edit (the
login page, then the edit shown again, saved on a click); and a page on another port of the same
host, which can set the login form's cookie, cannot log the browser in, neither with its own
origin nor from a sandboxed frame (``Origin: null``): the board's Origin check refuses both
(``tests/board/test_http_login.py`` sends the same with the planted cookie, which chromium
itself would not send across sites). No worker: nothing here runs a card.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.board.helpers import CARD, PASSWORD, copy_card, running_board
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
playwright = import_or_unavailable("playwright.sync_api", install="the dev extra")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]


@pytest.fixture
def browser() -> Iterator[object]:
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()


def log_in(page: object) -> None:
    page.fill("input[name=name]", "ann")  # type: ignore[attr-defined]
    page.fill("input[name=password]", PASSWORD)  # type: ignore[attr-defined]
    page.click("#login")  # type: ignore[attr-defined]


def test_two_login_tabs_both_log_in(tmp_path: Path, browser: object) -> None:
    with running_board(tmp_path) as board:
        context = browser.new_context()  # type: ignore[attr-defined]
        first, second = context.new_page(), context.new_page()
        first.goto(board.url + "/login")
        second.goto(board.url + "/login")  # the second tab's login form, same browser
        log_in(first)
        first.wait_for_selector(".columns")
        log_in(second)
        second.wait_for_selector(".columns")
        assert "log in" not in second.content().lower().split("<main")[1][:200]


def test_an_ended_login_keeps_the_edit(tmp_path: Path, browser: object) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    with running_board(tmp_path) as board:
        context = browser.new_context()  # type: ignore[attr-defined]
        page = context.new_page()
        page.goto(board.url + f"/cards/{CARD}.md")
        assert "/login?next=" in page.url  # to the login page, and back after it
        log_in(page)
        page.wait_for_selector("textarea[name=text]")
        assert page.url.endswith(f"/cards/{CARD}.md")
        edited = page.input_value("textarea[name=text]") + "\nWritten while the login ended.\n"
        page.fill("textarea[name=text]", edited)
        # meanwhile the login ends: another tab logs out (revoked on the server)
        other = context.new_page()
        other.goto(board.url + "/")
        other.click("header form button")
        other.wait_for_url("**/login")
        page.click("text=Save card")
        page.wait_for_selector("#login-error")
        assert "Your login has ended" in page.inner_text("#login-error")
        assert "Written while" not in (cards / f"{CARD}.md").read_text()
        log_in(page)
        page.wait_for_selector("#send-again")
        assert "Written while the login ended." in page.input_value("#send-again textarea")
        page.click("#send")
        page.wait_for_selector("#message")
        assert "Saved" in page.inner_text("#message")
        assert (cards / f"{CARD}.md").read_text().endswith("Written while the login ended.\n")


PLANT = """<!doctype html><title>another page on this host</title>
<script>document.cookie = "loopkit_board_login_form={nonce}; path=/";</script>
"""
FIELDS = """<input name="name" value="ann"><input name="password" value="{password}">
<input name="csrf" value="{nonce}">"""
DIRECT = (
    """<form id="f" method="post" action="{board}/login">"""
    + FIELDS
    + """</form>
<script>document.getElementById("f").submit()</script>"""
)
SANDBOXED = (
    """<iframe sandbox="allow-forms allow-scripts" srcdoc='<form id="f" method="post"
action="{board}/login">"""
    + FIELDS
    + """</form>
<script>document.getElementById("f").submit()</script>'></iframe>"""
)


@pytest.mark.parametrize("how", ["sandboxed frame (Origin: null)", "its own origin"])
def test_a_page_on_another_port_cannot_log_the_browser_in(
    tmp_path: Path, browser: object, how: str
) -> None:
    nonce = "A" * 32
    site = tmp_path / "attacker"
    site.mkdir()
    with running_board(tmp_path) as board:
        attack = PLANT + (DIRECT if how == "its own origin" else SANDBOXED)
        (site / "index.html").write_text(
            attack.format(nonce=nonce, board=board.url, password=PASSWORD)
        )
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            context = browser.new_context()  # type: ignore[attr-defined]
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html")
            # The form lands in the page or in its frame (an out-of-process frame: Playwright
            # shows its navigation, not its request): what the board answered is its page.
            landed = None
            for _ in range(900):
                landed = next((f for f in page.frames if f.url == board.url + "/login"), None)
                if landed is not None:
                    break
                page.wait_for_timeout(100)
            assert landed is not None, [f.url for f in page.frames]
            landed.wait_for_selector("body")
            # Refused by the board's own Origin check (chromium would not send the planted
            # cookie across sites anyway: it defaults to SameSite=Lax; other clients may).
            assert "cross-origin request refused" in landed.content()
            names = {c["name"] for c in context.cookies(board.url + "/login")}
            assert "loopkit_board" not in names  # nobody logged in
            names = {c["name"] for c in context.cookies(board.url + "/login")}
            assert "loopkit_board_login_form" in names  # the planted cookie reached the board
            assert "loopkit_board" not in names  # and logged nobody in
        finally:
            server.shutdown()
