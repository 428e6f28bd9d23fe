"""The board's login, over real HTTP on 127.0.0.1 (issue 21: an outside reviewer weakened each of
these without any test noticing): the login form checks the CSRF value it was given, not only
that there is one; an Origin of another port is another site; the login cookie expires (on the
server too) and is HttpOnly and SameSite=Strict.

The board is ``create_app`` served by uvicorn in this process (so a mutation run sees the gate's
code run), without its lifespan: the durable database is not needed by any route used here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.board.helpers import PASSWORD, TOKEN, csrf_of, write_accounts
from tests.installed import import_or_unavailable

uvicorn = import_or_unavailable("uvicorn", install="loopkit[board]")
import_or_unavailable("argon2", install="loopkit[board]")

from loopkit_board.app import create_app  # noqa: E402  (needs the board extra)
from loopkit_board.auth import COOKIE, LoginSession, Signer, load_accounts  # noqa: E402
from loopkit_board.gate import LOGIN_COOKIE  # noqa: E402
from loopkit_board.service import BoardService  # noqa: E402

pytestmark = pytest.mark.integration

TWELVE_HOURS = 12 * 3600
# A page that needs a login and nothing else (no database): the board's script.
LOGGED_IN_PAGE = "/static/board.js"


@dataclass
class Board:
    url: str
    port: int
    data_dir: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def logged_in(self, client: httpx.Client) -> bool:
        answer = client.get(LOGGED_IN_PAGE)
        assert answer.status_code in (200, 401), answer
        return answer.status_code == 200

    def login_form(self, client: httpx.Client) -> str:
        """Open the login page; the token its form carries."""
        page = client.get("/login")
        assert page.status_code == 200
        return csrf_of(page.text)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    accounts = load_accounts(write_accounts(tmp_path))
    data_dir = tmp_path / "data"
    service = BoardService(tmp_path / "cards", data_dir=data_dir)
    (tmp_path / "cards").mkdir()
    app = create_app(service, accounts)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the board did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Board(f"http://127.0.0.1:{port}", port, data_dir)
    finally:
        server.should_exit = True
        thread.join(30)


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """Each ``Set-Cookie`` header of ``response`` by cookie name (the whole header, lowercase)."""
    found = {}
    for header in response.headers.get_list("set-cookie"):
        found[header.split("=", 1)[0].strip()] = header.lower()
    return found


def attributes(header: str) -> dict[str, str]:
    parts = [p.strip() for p in header.split(";")[1:]]
    return {k: v for k, _, v in (p.partition("=") for p in parts)}


# -- the login form's CSRF value ----------------------------------------------------------------


def test_the_login_form_logs_in_with_the_value_it_was_given(board: Board) -> None:
    with board.client() as client:
        token = board.login_form(client)
        done = client.post("/login", data={"name": "ann", "password": PASSWORD, "csrf": token})
        assert done.status_code == 303 and done.headers["location"] == "/"
        assert board.logged_in(client)


@pytest.mark.parametrize("sent", ["wrong", "x" * 32, " "])
def test_the_login_form_refuses_a_value_it_never_gave(board: Board, sent: str) -> None:
    with board.client() as client:
        token = board.login_form(client)
        assert sent != token
        for form in (
            {"name": "ann", "password": PASSWORD, "csrf": sent},
            {"token": TOKEN, "csrf": sent},
        ):
            refused = client.post("/login", data=form)
            assert refused.status_code == 403, refused.text
            assert COOKIE not in set_cookies(refused)
            assert not board.logged_in(client)


def test_the_login_form_refuses_its_value_without_its_cookie(board: Board) -> None:
    with board.client() as client:
        token = board.login_form(client)
        client.cookies.clear()  # a foreign page posting a token it read somehow
        refused = client.post("/login", data={"name": "ann", "password": PASSWORD, "csrf": token})
        assert refused.status_code == 403
        assert not board.logged_in(client)


# -- the Origin's port ---------------------------------------------------------------------------


def test_an_origin_on_another_port_is_another_site(board: Board) -> None:
    other_port = board.port + 1 if board.port < 65535 else board.port - 1
    foreign = f"http://127.0.0.1:{other_port}"
    with board.client() as client:
        token = board.login_form(client)
        form = {"name": "ann", "password": PASSWORD, "csrf": token}
        refused = client.post("/login", data=form, headers={"origin": foreign})
        assert refused.status_code == 403
        assert not board.logged_in(client)
        # no port at all is another origin too (port 80)
        refused = client.post("/login", data=form, headers={"origin": "http://127.0.0.1"})
        assert refused.status_code == 403
        # the board's own origin, port included, is accepted
        done = client.post("/login", data=form, headers={"origin": board.url})
        assert done.status_code == 303 and board.logged_in(client)
        # ... and for a logged-in request: a logout from another port is refused
        csrf = _session_csrf(board, client)
        out = client.post("/logout", data={"csrf": csrf}, headers={"origin": foreign})
        assert out.status_code == 403 and board.logged_in(client)
        out = client.post("/logout", data={"csrf": csrf}, headers={"origin": board.url})
        assert out.status_code == 303 and not board.logged_in(client)


def _session_csrf(board: Board, client: httpx.Client) -> str:
    session = Signer(board.data_dir).read(client.cookies.get(COOKIE))
    assert session is not None
    return session.csrf


# -- the cookies ---------------------------------------------------------------------------------


def test_the_login_cookies_are_http_only_and_same_site_strict(board: Board) -> None:
    with board.client() as client:
        page = client.get("/login")
        form_cookie = attributes(set_cookies(page)[LOGIN_COOKIE])
        assert "httponly" in form_cookie and form_cookie.get("samesite") == "strict"
        # site-wide (the gate shows the login page at other addresses) and for a day
        assert form_cookie.get("path") == "/" and form_cookie.get("max-age") == str(24 * 3600)
        token = csrf_of(page.text)
        done = client.post("/login", data={"name": "ann", "password": PASSWORD, "csrf": token})
        assert done.status_code == 303
        login = attributes(set_cookies(done)[COOKIE])
        assert "httponly" in login, login
        assert login.get("samesite") == "strict", login
        # it expires: twelve hours from now (a browser drops it then)
        assert login.get("max-age") == str(TWELVE_HOURS), login
        session = Signer(board.data_dir).read(client.cookies.get(COOKIE))
        assert session is not None and session.user == "ann"
        assert abs(session.expires - (time.time() + TWELVE_HOURS)) < 60


def test_a_failed_login_keeps_the_form_cookie_and_its_token(board: Board) -> None:
    with board.client() as client:
        token = board.login_form(client)
        nonce = client.cookies.get(LOGIN_COOKIE)
        assert nonce
        wrong = client.post("/login", data={"name": "ann", "password": "no", "csrf": token})
        assert wrong.status_code == 401
        cookies = set_cookies(wrong)
        assert COOKIE not in cookies
        # the same nonce again (every open login tab shares it), of the same kind
        kept = attributes(cookies[LOGIN_COOKIE])
        assert "httponly" in kept and kept.get("samesite") == "strict" and kept.get("path") == "/"
        assert cookies[LOGIN_COOKIE].startswith(f"{LOGIN_COOKIE}={nonce.lower()};")
        assert client.cookies.get(LOGIN_COOKIE) == nonce
        # so the form shown again carries the same token, and it works
        again = csrf_of(wrong.text)
        assert again == token
        done = client.post("/login", data={"name": "ann", "password": PASSWORD, "csrf": again})
        assert done.status_code == 303


def test_an_expired_login_is_no_login_even_with_a_valid_signature(board: Board) -> None:
    signer = Signer(board.data_dir)  # the board's own key (in its data folder)
    with board.client() as client:
        for expires, works in ((time.time() + 60, True), (time.time() - 1, False)):
            client.cookies.set(COOKIE, signer.sign(LoginSession("ann", expires, "c" * 32)))
            assert board.logged_in(client) is works
