"""What clients can make the board spend, over real HTTP: wrong passwords and junk tokens are
limited (429 with ``Retry-After`` and "try again in N s", per client and per account) while other
pages keep answering, and live event streams are capped per login and in all, and come back
when they close. Timing is never asserted here (``bench/test_board_limits_bench.py`` measures
it); the statuses and the board process's thread count are.

A real ``python -m loopkit_board`` on a free loopback port. Clients are told apart by address;
uvicorn takes a proxy's ``X-Forwarded-For`` from 127.0.0.1, which these tests use to be several.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.board.helpers import CARD, PASSWORD, TOKEN, Board, copy_card, csrf_of, running_board
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = pytest.mark.integration


def _login(client: httpx.Client, name: str, password: str, address: str) -> httpx.Response:
    page = client.get("/login")
    token = csrf_of(page.text)
    return client.post(
        "/login",
        data={"name": name, "password": password, "csrf": token},
        headers={"x-forwarded-for": address},
    )


def test_wrong_passwords_are_limited_per_account_and_per_client(tmp_path: Path) -> None:
    with running_board(tmp_path) as board, board.client() as client:
        for _ in range(5):
            assert _login(client, "ann", "wrong", "10.0.0.1").status_code == 401
        # the account waits now, even with the right password and from another address
        limited = _login(client, "ann", PASSWORD, "10.0.0.2")
        assert limited.status_code == 429, limited.text
        seconds = int(limited.headers["retry-after"])
        assert 1 <= seconds <= 60
        assert re.search(
            r"too many wrong passwords for &#39;ann&#39;; try again in \d+ s", limited.text
        )
        # meanwhile the other pages answer, and so does a program with its token
        assert client.get("/login").status_code == 200
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert client.get("/", headers=bearer).status_code == 200
        # another account is not limited by ann's wrong passwords
        assert _login(client, "bob", "wrong", "10.0.0.2").status_code == 401
        # one address trying many names: limited after ten failures, whatever the names
        for n in range(10):
            assert _login(client, f"user{n}", "wrong", "10.0.0.3").status_code == 401
        from_there = _login(client, "carol", "wrong", "10.0.0.3")
        assert from_there.status_code == 429
        assert "too many failed logins from this address" in from_there.text
        # and junk bearer tokens from there too, answered without hashing
        junk = client.get(
            "/runs", headers={"authorization": "Bearer junk", "x-forwarded-for": "10.0.0.3"}
        )
        assert junk.status_code == 429 and junk.headers["retry-after"]


def test_a_flood_of_junk_tokens_is_refused_and_other_pages_answer(tmp_path: Path) -> None:
    with running_board(tmp_path) as board:

        def junk(n: int) -> int:
            headers = {
                "authorization": f"Bearer junk-{n}-{'x' * 40}",
                "x-forwarded-for": "10.9.9.9",
            }
            return httpx.get(board.url + "/runs", headers=headers, timeout=120).status_code

        with ThreadPoolExecutor(40) as pool:
            flood = [pool.submit(junk, n) for n in range(40)]
            # while the flood is being answered: the login page and a logged-in page answer
            with board.client() as client:
                assert client.get("/login").status_code == 200
                assert board.login(client).status_code == 303
                assert client.get("/").status_code == 200
            statuses = [f.result() for f in flood]
        assert set(statuses) <= {401, 429}, statuses
        assert statuses.count(429) > 0, statuses  # two checks at a time per client, eight queued
        print(
            f"\n40 junk tokens at once: {statuses.count(401)} checked, {statuses.count(429)} refused"
        )


@contextmanager
def _streams(board: Board) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()


def _open_stream(
    board: Board, path: str, headers: dict[str, str], into: list[socket.socket]
) -> int:
    """Open an event stream on a raw socket (kept open in ``into``); its HTTP status."""
    host, port = board.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {host}:{port}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n" not in head:
        chunk = sock.recv(1024)
        if not chunk:
            break
        head += chunk
    into.append(sock)
    return int(head.split(b" ", 2)[1])


def _threads(board: Board) -> int:
    status = Path(f"/proc/{board.process.pid}/status").read_text()
    return int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]


def _queued_run(board: Board, client: httpx.Client) -> str:
    csrf = csrf_of(client.get("/").text)
    queued = client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf})
    return re.search(r"/runs/([0-9a-f]{32})", queued.headers["location"]).group(1)  # type: ignore[union-attr]


def test_streams_are_capped_per_login_and_in_all_and_come_back(tmp_path: Path) -> None:
    copy_card(tmp_path / "cards")
    args = ("--max-streams", "5", "--max-streams-per-login", "3")
    with running_board(tmp_path, *args) as board, board.client() as first, board.client() as second:
        board.login(first)
        board.login(second)
        run_id = _queued_run(board, first)
        path = f"/runs/{run_id}/events"
        one = {"cookie": f"loopkit_board={first.cookies.get('loopkit_board')}"}
        two = {"cookie": f"loopkit_board={second.cookies.get('loopkit_board')}"}
        bearer = {"authorization": f"Bearer {TOKEN}"}
        with _streams(board) as a, _streams(board) as b:
            assert [_open_stream(board, path, one, a) for _ in range(3)] == [200, 200, 200]
            assert _open_stream(board, path, one, a) == 429  # this login's three are open
            assert [_open_stream(board, path, bearer, b) for _ in range(2)] == [200, 200]
            assert _open_stream(board, path, two, b) == 429  # five in all
            refused = first.get(path)
            assert refused.status_code == 429 and "try again in" in refused.text
            assert first.get("/login").status_code == 200  # pages answer meanwhile
            for sock in a:
                sock.close()
            a.clear()
            # the closed streams' slots come back (the board notices within its ping time)
            deadline = 0
            while _open_stream(board, path, two, b) != 200:
                b.pop().close()
                deadline += 1
                assert deadline < 200, "the slots of closed streams never came back"
                time.sleep(0.1)


def test_many_streams_do_not_make_many_threads(tmp_path: Path) -> None:
    copy_card(tmp_path / "cards")
    with running_board(tmp_path, "--max-streams-per-login", "150") as board, board.client() as c:
        board.login(c)
        run_id = _queued_run(board, c)
        cookie = {"cookie": f"loopkit_board={c.cookies.get('loopkit_board')}"}
        before = _threads(board)
        with _streams(board) as opened:
            # all at once: each stream reads the run from the database before it starts
            with ThreadPoolExecutor(50) as pool:
                statuses = list(
                    pool.map(
                        lambda _: _open_stream(board, f"/runs/{run_id}/events", cookie, opened),
                        range(150),
                    )
                )
            assert statuses == [200] * 150
            during = _threads(board)
            assert c.get("/login").status_code == 200
        print(f"\nboard threads: {before} before, {during} with 150 streams open")
        # DBOS's pool (32), the argon2 pool (2), anyio's file threads, uvicorn and DBOS's own
        assert during <= before + 40, (before, during)
        assert c.get("/").status_code == 200
