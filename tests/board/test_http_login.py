"""Logging in over real HTTP, as a browser and as an attacker on another page: the Origin's
scheme, host and port, ``Origin: null``, a login cookie planted from another port, two login
tabs, ``Secure`` cookies over HTTPS, and an ended login that keeps what the user was sending.

A real ``python -m loopkit_board`` process on a free loopback port; httpx sends what a browser
sends (``Accept: text/html`` for a page's form, ``Origin``, ``Sec-Fetch-Site``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from tests.board.helpers import CARD, PASSWORD, Board, copy_card, csrf_of, running_board
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = pytest.mark.integration

PAGE = {"accept": "text/html,application/xhtml+xml"}


def _field(page: str, name: str) -> str | None:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    return html.unescape(found.group(1)) if found else None


def _login_form(client: httpx.Client, query: str = "") -> str:
    page = client.get("/login" + query, headers=PAGE)
    assert page.status_code == 200
    return page.text


def _log_in(client: httpx.Client, page: str, **extra: str) -> httpx.Response:
    form = {"name": "ann", "password": PASSWORD, "csrf": _field(page, "csrf") or "", **extra}
    for kept in ("next", "resume"):
        value = _field(page, kept)
        if value is not None:
            form[kept] = value
    return client.post("/login", data=form, headers=PAGE)


def test_origins_are_compared_by_scheme_host_and_port(tmp_path: Path) -> None:
    with running_board(tmp_path) as board, board.client() as client:
        port = int(board.url.rsplit(":", 1)[1])
        own = f"http://127.0.0.1:{port}"
        page = _login_form(client)
        foreign = ["null", f"http://127.0.0.1:{port + 1}", f"https://127.0.0.1:{port}",
                   "http://127.0.0.1", f"http://localhost.evil:{port}", "file://",
                   f"http://127.0.0.1:{port}.evil.example", "garbage"]  # fmt: skip
        for origin in foreign:
            answer = client.post(
                "/login",
                data={"name": "ann", "password": PASSWORD, "csrf": _field(page, "csrf")},
                headers={**PAGE, "origin": origin},
            )
            assert answer.status_code == 403, origin
            assert "loopkit_board=" not in answer.headers.get("set-cookie", ""), origin
        for fetch_site in ("cross-site", "same-site"):  # another port is the same site
            answer = client.post(
                "/login",
                data={"name": "ann", "password": PASSWORD, "csrf": _field(page, "csrf")},
                headers={**PAGE, "origin": own, "sec-fetch-site": fetch_site},
            )
            assert answer.status_code == 403, fetch_site
        done = client.post(
            "/login",
            data={"name": "ann", "password": PASSWORD, "csrf": _field(page, "csrf")},
            headers={**PAGE, "origin": own, "sec-fetch-site": "same-origin"},
        )
        assert done.status_code == 303
        # once logged in, the same rules for every state-changing request
        csrf = csrf_of(client.get("/", headers=PAGE).text)
        made = {"title": "Made", "body": "x", "csrf": csrf}
        for origin in ("null", f"http://127.0.0.1:{port + 1}"):
            refused = client.post("/cards", data=made, headers={"origin": origin})
            assert refused.status_code == 403, origin
        assert not (tmp_path / "cards" / "made.md").exists()
        assert client.post("/cards", data=made, headers={"origin": own}).status_code == 303


def test_a_login_cookie_planted_from_another_port_does_not_log_anyone_in(tmp_path: Path) -> None:
    # Cookies are not separated by port: a page on another port of this host can set the login
    # form's cookie. With the old double submit (cookie == field) that was enough.
    with running_board(tmp_path) as board, board.client() as client:
        planted = "A" * 32
        client.cookies.set("loopkit_board_login_form", planted)
        answer = client.post(
            "/login", data={"name": "ann", "password": PASSWORD, "csrf": planted}, headers=PAGE
        )
        assert answer.status_code == 403 and "loopkit_board=" not in str(answer.headers)
        assert "The login form expired" in answer.text  # a page with a fresh form, not text
        retry = _log_in(client, answer.text)
        assert retry.status_code == 303 and client.get("/").status_code == 200


def test_two_login_tabs_both_log_in(tmp_path: Path) -> None:
    with running_board(tmp_path) as board, board.client() as client:
        first = _login_form(client)
        second = _login_form(client)  # the second tab: the cookie is kept, not replaced
        # a third tab posts a form without a login: the login page it gets shares it too
        third = client.post("/cards", data={"title": "x", "csrf": "x"}, headers=PAGE)
        assert third.status_code == 401 and "Your login has ended" in third.text
        assert _log_in(client, first).status_code == 303
        assert _log_in(client, second).status_code == 303
        assert client.get("/").status_code == 200
        # a login form from before a restart of the browser's cookie still gets a page
        client.cookies.clear()
        expired = _log_in(client, first)
        assert expired.status_code == 403 and "The login form expired" in expired.text
        assert _log_in(client, expired.text).status_code == 303


def test_cookies_are_secure_over_https(tmp_path: Path) -> None:
    # A TLS proxy in front, on this machine, says so with X-Forwarded-Proto (uvicorn trusts
    # it from 127.0.0.1).
    with running_board(tmp_path) as board, board.client() as client:
        plain = client.get("/login", headers=PAGE)
        assert "secure" not in plain.headers["set-cookie"].lower()
        https = {**PAGE, "x-forwarded-proto": "https"}
        page = client.get("/login", headers=https)
        assert "secure" in page.headers["set-cookie"].lower()
        port = board.url.rsplit(":", 1)[1]
        # httpx keeps a Secure cookie from this http:// URL, as a browser would over https
        nonce = re.search(r"loopkit_board_login_form=([^;]+)", page.headers["set-cookie"])
        assert nonce
        https["cookie"] = f"loopkit_board_login_form={nonce.group(1)}"
        client.cookies.clear()
        # over https, an http:// origin is another origin
        wrong = client.post(
            "/login",
            data={"name": "ann", "password": PASSWORD, "csrf": _field(page.text, "csrf")},
            headers={**https, "origin": f"http://127.0.0.1:{port}"},
        )
        assert wrong.status_code == 403
        done = client.post(
            "/login",
            data={"name": "ann", "password": PASSWORD, "csrf": _field(page.text, "csrf")},
            headers={**https, "origin": f"https://127.0.0.1:{port}"},
        )
        assert done.status_code == 303
        session = done.headers["set-cookie"]
        assert session.startswith("loopkit_board=") and "secure" in session.lower()
        assert "httponly" in session.lower() and "samesite=strict" in session.lower()


def _revoked_login(board: Board, client: httpx.Client) -> str:
    """Log in, copy the cookie, log out (revoked), and put the copy back: an ended login."""
    assert _log_in(client, _login_form(client)).status_code == 303
    cookie = client.cookies.get("loopkit_board")
    csrf = csrf_of(client.get("/", headers=PAGE).text)
    assert client.post("/logout", data={"csrf": csrf}).status_code == 303
    client.cookies.set("loopkit_board", cookie or "")
    return csrf


def test_an_ended_login_keeps_the_form_for_after_the_login(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    with running_board(tmp_path) as board, board.client() as client:
        csrf = _revoked_login(board, client)
        edited = (cards / f"{CARD}.md").read_text() + "\nEdited while the login ended.\n"
        sent = client.post(f"/cards/{CARD}.md", data={"text": edited, "csrf": csrf}, headers=PAGE)
        # not a plain-text 401: the login page, holding what was sent
        assert sent.status_code == 401 and sent.headers["content-type"].startswith("text/html")
        assert "Your login has ended" in sent.text
        kept = json.loads(_field(sent.text, "resume") or "{}")
        assert kept == {"action": f"/cards/{CARD}.md", "fields": {"text": edited}}
        assert "Edited while" not in (cards / f"{CARD}.md").read_text()  # nothing saved yet
        client.cookies.delete("loopkit_board")
        again = _log_in(client, sent.text)
        # logged in, and shown what was being sent, with this login's token; sent on a click
        assert again.status_code == 200 and 'id="send-again"' in again.text
        assert f'action="/cards/{CARD}.md"' in again.text
        assert "Edited while the login ended." in html.unescape(again.text)
        assert "Edited while" not in (cards / f"{CARD}.md").read_text()
        form = {"csrf": _field(again.text, "csrf") or "", "text": edited}
        saved = client.post(f"/cards/{CARD}.md", data=form, headers=PAGE)
        assert saved.status_code == 303 and "Saved" in unquote(saved.headers["location"])
        assert (cards / f"{CARD}.md").read_text().endswith("Edited while the login ended.\n")

        # a page asked for without a login: to the login page and back to it after
        client.cookies.delete("loopkit_board")
        asked = client.get(f"/cards/{CARD}.md", headers=PAGE)
        assert asked.status_code == 303
        assert asked.headers["location"] == f"/login?next=%2Fcards%2F{CARD}.md"
        back = _log_in(client, _login_form(client, f"?next=/cards/{CARD}.md"))
        assert back.status_code == 303 and back.headers["location"] == f"/cards/{CARD}.md"
        for evil in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
            client.cookies.delete("loopkit_board")
            away = _log_in(client, _login_form(client, f"?next={evil}"))
            assert away.headers["location"] == "/", evil
        # a script's request (no page to show) still gets a plain 401
        client.cookies.delete("loopkit_board")
        assert client.post(f"/cards/{CARD}.md", data={"text": "x"}).status_code == 401


def test_a_form_of_an_earlier_login_is_offered_again(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    with running_board(tmp_path) as board, board.client() as client:
        assert _log_in(client, _login_form(client)).status_code == 303
        old_csrf = csrf_of(client.get("/", headers=PAGE).text)
        # another tab logs in again: a new session replaces the cookie
        assert _log_in(client, _login_form(client)).status_code == 303
        answer = client.post(
            "/cards",
            data={"title": "From the old tab", "body": "b", "csrf": old_csrf},
            headers=PAGE,
        )
        assert answer.status_code == 403 and 'id="send-again"' in answer.text
        new_csrf = _field(answer.text, "csrf")
        assert new_csrf and new_csrf != old_csrf
        assert not (cards / "from-the-old-tab.md").exists()
        form = {"csrf": new_csrf, "title": "From the old tab", "body": "b"}
        assert client.post("/cards", data=form, headers=PAGE).status_code == 303
        assert (cards / "from-the-old-tab.md").is_file()
        # without a page to show (a script): still a plain 403
        assert client.post("/cards", data={"title": "x", "csrf": old_csrf}).status_code == 403
