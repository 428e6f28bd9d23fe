"""The board's gate around a small app that echoes what it was handed, over real HTTP on
127.0.0.1 (the gate is an ASGI middleware any app can sit behind): the host and origin checks,
who is logged in (cookie or bearer token), CSRF on every state-changing method, the form it
reads and the body it hands on, and the lifespan it lets through. Found unpinned by
``nox -s mutate -- board``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.board.helpers import TOKEN, write_accounts
from tests.installed import import_or_unavailable

uvicorn = import_or_unavailable("uvicorn", install="loopkit[board]")
import_or_unavailable("argon2", install="loopkit[board]")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, Response, StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from loopkit_board.auth import COOKIE, Accounts, LoginSession, Signer, load_accounts  # noqa: E402
from loopkit_board.gate import MAX_FORM_BYTES, Gate  # noqa: E402
from loopkit_board.limits import SecretChecker  # noqa: E402

pytestmark = pytest.mark.integration

LIFESPAN: list[str] = []


async def echo(request: Request) -> Response:
    state = request.scope.get("state", {})
    body = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "user": state.get("user"),
            "csrf": state.get("csrf"),
            "form": state.get("form"),
            "body": body.decode("utf-8", "replace"),
        }
    )


STREAM: dict[str, Any] = {}


async def stream(request: Request) -> Response:
    """Streams the body back, then waits (up to 30 s) for more to send: a client that goes
    away must end it at once (Starlette listens for the disconnect through the gate)."""
    body = await request.body()
    STREAM["closed"] = asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        try:
            yield body
            await asyncio.sleep(30)
            yield b"never read"
        finally:
            STREAM["closed"].set()

    return StreamingResponse(chunks(), media_type="text/plain")


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    LIFESPAN.append("started")
    yield
    LIFESPAN.append("stopped")


@dataclass
class Served:
    url: str
    port: int
    signer: Signer
    accounts: Accounts

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, headers=headers)

    def login_cookie(self, user: str = "ann", csrf: str = "c" * 32) -> str:
        return self.signer.sign(LoginSession(user, time.time() + 600, csrf))


def serve(app: Any) -> tuple[Any, threading.Thread, int]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    return server, thread, server.servers[0].sockets[0].getsockname()[1]


@pytest.fixture
def gated(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Served]:
    allowed = getattr(request, "param", None)
    accounts = load_accounts(write_accounts(tmp_path))
    signer = Signer(tmp_path / "data")
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    app = Starlette(
        routes=[
            Route("/echo", echo, methods=methods),
            Route("/login", echo, methods=methods),
            Route("/stream", stream, methods=["POST"]),
        ],
        lifespan=lifespan,
    )
    checker = SecretChecker(accounts)
    app.add_middleware(Gate, signer=signer, checker=checker, allowed_hosts=allowed)
    LIFESPAN.clear()
    server, thread, port = serve(app)
    try:
        yield Served(f"http://127.0.0.1:{port}", port, signer, accounts)
    finally:
        server.should_exit = True
        thread.join(30)
        checker.close()


# -- what passes through ------------------------------------------------------------------------


def test_the_lifespan_passes_through_the_gate(gated: Served) -> None:
    assert LIFESPAN == ["started"]


def test_the_login_page_needs_no_login(gated: Served) -> None:
    with gated.client() as client:
        page = client.get("/login")
        assert page.status_code == 200 and page.json()["user"] is None


# -- who is logged in ---------------------------------------------------------------------------


def test_without_a_login_a_page_goes_to_the_login_and_anything_else_is_refused(
    gated: Served,
) -> None:
    with gated.client() as client:
        html = {"accept": "text/html,application/xhtml+xml"}
        # a page goes to the login and names itself (query too) to come back to after it
        for target, login in (
            ("/echo", "/login?next=%2Fecho"),
            ("/echo?a=1&b=x y", "/login?next=%2Fecho%3Fa%3D1%26b%3Dx%2520y"),
            ("/", "/login"),
        ):
            page = client.get(target, headers=html)
            assert (page.status_code, page.headers["location"]) == (303, login), target
        for answer in (
            client.get("/echo"),
            client.get("/echo", headers={"accept": "application/json"}),
            client.post("/echo", headers={"accept": "text/html"}, data={"csrf": "x"}),
        ):
            assert answer.status_code == 401
            assert answer.text == "log in first (or send Authorization: Bearer)"


def test_a_login_cookie_names_the_user_and_its_csrf_token(gated: Served) -> None:
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie("ann", "tok-" + "t" * 28))
        seen = client.get("/echo").json()
        assert (seen["user"], seen["csrf"]) == ("ann", "tok-" + "t" * 28)


@pytest.mark.parametrize("cookie", ["a=b; =broken; \x7f", 'loopkit_board="unterminated'])
def test_a_malformed_cookie_header_is_no_login(gated: Served, cookie: str) -> None:
    with gated.client(cookie=cookie) as client:
        assert client.get("/echo").status_code == 401


def test_a_bearer_token_logs_a_program_in_without_csrf(
    gated: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[str] = []
    real = Accounts.check_token

    def counting(self: Accounts, token: str) -> str | None:
        checks.append(token)
        return real(self, token)

    monkeypatch.setattr(Accounts, "check_token", counting)
    for scheme in ("Bearer", "bearer", "BEARER"):
        with gated.client(authorization=f"{scheme} {TOKEN}") as client:
            seen = client.post("/echo", data={"x": "1"}).json()
            assert (seen["user"], seen["csrf"], seen["form"]) == ("token:ci", "", {"x": "1"})
    # argon2 ran once: a verified token is remembered
    assert checks == [TOKEN]
    with gated.client(authorization="Bearer not-the-token") as client:
        assert client.get("/echo").status_code == 401
        assert client.post("/echo").status_code == 401
    # a cookie does not help a request whose bearer token is wrong
    with gated.client(authorization="Bearer not-the-token") as client:
        client.cookies.set(COOKIE, gated.login_cookie())
        assert client.get("/echo").status_code == 401


# -- CSRF ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_every_state_changing_method_needs_the_csrf_token(gated: Served, method: str) -> None:
    csrf = "k" * 32
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie(csrf=csrf))
        form = {"content-type": "application/x-www-form-urlencoded"}
        for headers, body in (
            (form, ""),
            (form, "csrf=wrong"),
            (form, "csrf="),
            ({"x-csrf-token": "wrong"}, ""),
            ({"content-type": "application/json"}, json.dumps({"csrf": csrf})),  # not a form
        ):
            refused = client.request(method, "/echo", headers=headers, content=body)
            assert (refused.status_code, refused.text) == (403, "CSRF token missing or wrong")
        by_field = client.request(method, "/echo", headers=form, content=f"a=1&csrf={csrf}")
        assert by_field.status_code == 200 and by_field.json()["method"] == method
        by_header = client.request(method, "/echo", headers={"x-csrf-token": csrf})
        assert by_header.status_code == 200
    # GET changes nothing: no token needed
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie(csrf=csrf))
        assert client.get("/echo").status_code == 200


# -- the form and the body ----------------------------------------------------------------------


def test_the_gate_reads_a_form_and_hands_the_body_on_unchanged(gated: Served) -> None:
    csrf = "k" * 32
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie(csrf=csrf))
        body = f"title=Caf%C3%A9&empty=&csrf={csrf}"
        seen = client.post(
            "/echo",
            content=body,
            headers={"content-type": "application/x-www-form-urlencoded; charset=utf-8"},
        ).json()
        assert seen["form"] == {"title": "Café", "empty": "", "csrf": csrf}
        assert seen["body"] == body  # the route can still read the body itself
        data = json.dumps({"title": "JSON"})
        seen = client.post(
            "/echo",
            content=data,
            headers={"content-type": "application/json", "x-csrf-token": csrf},
        ).json()
        assert (seen["form"], seen["body"]) == ({}, data)


def test_a_body_over_the_limit_is_refused_whole(gated: Served) -> None:
    csrf = "k" * 32
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie(csrf=csrf))
        head = f"csrf={csrf}&x="
        headers = {"content-type": "application/x-www-form-urlencoded"}
        fits = head + "y" * (MAX_FORM_BYTES - len(head))
        seen = client.post("/echo", content=fits, headers=headers)
        assert seen.status_code == 200 and len(seen.json()["body"]) == MAX_FORM_BYTES
        over = client.post("/echo", content=fits + "y", headers=headers)
        assert (over.status_code, over.text) == (413, "request body too large")
    with gated.client() as client:  # no login either: still too large first
        assert client.post("/login", content="y" * (MAX_FORM_BYTES + 1)).status_code == 413


# -- host and origin ----------------------------------------------------------------------------


@pytest.mark.parametrize("gated", [["board.example", "[::1]"]], indirect=True)
def test_only_the_allowed_host_names_are_served(gated: Served) -> None:
    with gated.client() as client:
        for host in ("board.example", f"BOARD.example:{gated.port}", f"[::1]:{gated.port}"):
            assert client.get("/login", headers={"host": host}).status_code == 200, host
        for host in ("attacker.example", f"127.0.0.1:{gated.port}", "board.example.evil"):
            refused = client.get("/login", headers={"host": host})
            assert (refused.status_code, refused.text) == (421, f"host {host!r} is not this board")


def test_without_allowed_hosts_any_host_name_is_served(gated: Served) -> None:
    with gated.client() as client:
        assert client.get("/login", headers={"host": "anything.example"}).status_code == 200


def test_an_origin_must_be_this_board(gated: Served) -> None:
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie())
        assert client.get("/echo", headers={"origin": gated.url}).status_code == 200
        for origin in (
            "http://evil.example",
            f"http://evil.example:{gated.port}",
            f"ftp://127.0.0.1:{gated.port}",
            f"http://127.0.0.1:{gated.port + 1}",
            "not a url",
        ):
            refused = client.get("/echo", headers={"origin": origin})
            assert (refused.status_code, refused.text) == (403, "cross-origin request refused")


# -- found by the second mutation run -----------------------------------------------------------


def raw(served: Served, request: bytes) -> bytes:
    """Send ``request`` as it is (no client adds a header) and read the whole answer."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_request_without_an_accept_header_is_refused_not_failed(gated: Served) -> None:
    answer = raw(gated, b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 401 ") and answer.endswith(
        b"log in first (or send Authorization: Bearer)"
    )


@pytest.mark.parametrize("gated", [["board.example"]], indirect=True)
def test_a_request_without_a_host_is_not_this_board(gated: Served) -> None:
    answer = raw(gated, b"GET /login HTTP/1.0\r\nOrigin: http://board.example\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 421 ") and answer.endswith(b"host '' is not this board")


def test_without_allowed_hosts_a_request_without_a_host_is_checked_by_origin(
    gated: Served,
) -> None:
    answer = raw(gated, b"GET /login HTTP/1.0\r\nOrigin: http://elsewhere.example\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 ") and answer.endswith(b"cross-origin request refused")
    assert raw(gated, b"GET /login HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("gated", [["localhost", "[::1]"]], indirect=True)
def test_host_and_origin_names_compare_without_case(gated: Served) -> None:
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie())
        for host, origin in (
            (f"LocalHost:{gated.port}", f"http://localhost:{gated.port}"),
            (f"localhost:{gated.port}", f"http://LOCALHOST:{gated.port}"),
        ):
            seen = client.get("/echo", headers={"host": host, "origin": origin})
            assert seen.status_code == 200, (host, origin)
        assert client.get("/login", headers={"host": "[::1]"}).status_code == 200
        assert client.get("/login", headers={"host": "[::2]"}).status_code == 421


def test_a_form_that_is_not_utf8_is_read_with_replacements(gated: Served) -> None:
    csrf = "k" * 32
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie(csrf=csrf))
        seen = client.post(
            "/echo",
            content=b"title=\xff\xfe&csrf=" + csrf.encode(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert seen.status_code == 200
        assert seen.json()["form"] == {"title": "\ufffd\ufffd", "csrf": csrf}


def test_a_streamed_answer_to_a_form_notices_the_client_leaving(gated: Served) -> None:
    csrf = "k" * 32
    with gated.client() as client:
        client.cookies.set(COOKIE, gated.login_cookie(csrf=csrf))
        with client.stream(
            "POST", "/stream", headers={"x-csrf-token": csrf}, content=b"first part"
        ) as answer:
            assert answer.status_code == 200
            assert next(answer.iter_raw()) == b"first part"
        # the connection is closed: the server ends the stream (its 30-second wait with it)
    closed: asyncio.Event = STREAM["closed"]
    deadline = time.monotonic() + 20
    while not closed.is_set():
        assert time.monotonic() < deadline, "the stream went on after the client left"
        time.sleep(0.05)
