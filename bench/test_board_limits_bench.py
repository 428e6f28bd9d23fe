"""The board under a flood: how long its pages take to answer while clients attack it, beside the
code before the limits (main at 80d26e9, issue 21).

Each side is a real ``python -m loopkit_board`` on a free loopback port (the old side runs the
old ``src/`` taken with ``git archive``, with this checkout's environment), one queued run. A
prober thread asks ``GET /login`` (no login) and ``GET /`` (a logged-in page: the card listing
and one database query) every 0.2 s and notes each answer's time. Phases, one after the other,
each ``PHASE_S`` seconds:

| phase | the attack |
|---|---|
| idle | none |
| wrong logins | 16 clients at once, each a new name and a new address, posting wrong passwords in a loop |
| junk tokens | 10 clients at once, each request a new junk ``Authorization: Bearer`` from a new address |
| 1,000 streams | 1,000 event streams of the queued run opened at once (one login) and held |

Addresses come from ``X-Forwarded-For`` (uvicorn takes it from 127.0.0.1), the worst case for
per-address limits. The table: the probes' median and max (ms) per phase and side (median, 95th
percentile, max, and how many probes took over 1 s), how many got no answer within 30 s, the attack's requests answered and refused (429), and the board's
thread count at the phase's end. The goal (issue 21): other pages answer within 1 s meanwhile.
Speed is printed, never asserted.
Run: ``.venv/bin/python -m pytest bench/test_board_limits_bench.py -s -q -p no:cacheprovider``.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from tests.board.helpers import CARD, PASSWORD, board_env, copy_card, csrf_of, write_accounts

pytest.importorskip("dbos")

ROOT = Path(__file__).resolve().parents[1]
OLD = "80d26e9"
PHASE_S = 12.0
PROBE_EVERY_S = 0.2
PROBE_TIMEOUT_S = 30.0


class Board:
    def __init__(self, folder: Path, src: Path | None) -> None:
        copy_card(folder / "cards")
        write_accounts(folder)
        env = board_env(folder)
        if src is not None:
            env["PYTHONPATH"] = str(src)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "loopkit_board", "--cards", str(folder / "cards"),
             "--accounts", str(folder / "accounts.toml"), "--port", "0"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"board on (http://\S+?)/ ", line)
        assert found, line
        self.url = found.group(1)
        for _ in range(300):
            try:
                if httpx.get(self.url + "/login", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.client = httpx.Client(base_url=self.url, timeout=PROBE_TIMEOUT_S)
        page = self.client.get("/login")
        self.client.post(
            "/login", data={"name": "ann", "password": PASSWORD, "csrf": csrf_of(page.text)}
        )
        csrf = csrf_of(self.client.get("/").text)
        queued = self.client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf})
        self.run_id = re.search(r"/runs/(\w+)", queued.headers["location"]).group(1)  # type: ignore[union-attr]
        self.cookie = str(self.client.cookies.get("loopkit_board"))

    def threads(self) -> int:
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return -1
        return int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]

    def stop(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@contextmanager
def probing(board: Board) -> Iterator[list[float | None]]:
    """Times (ms) of GET /login and GET / every PROBE_EVERY_S while the block runs (None: no
    answer within PROBE_TIMEOUT_S)."""
    times: list[float | None] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=board.url, timeout=PROBE_TIMEOUT_S) as client:
            client.cookies.set("loopkit_board", board.cookie)
            for path in itertools.cycle(["/login", "/"]):
                if done.is_set():
                    return
                start = time.perf_counter()
                try:
                    ok = client.get(path).status_code == 200
                    times.append((time.perf_counter() - start) * 1000 if ok else None)
                except httpx.HTTPError:
                    times.append(None)
                done.wait(PROBE_EVERY_S)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    try:
        yield times
    finally:
        done.set()
        thread.join(PROBE_TIMEOUT_S + 5)


def attack(workers: int, one: Callable[[int], int], seconds: float) -> dict[int, int]:
    """``workers`` threads calling ``one(n)`` (returns a status) in a loop for ``seconds``."""
    statuses: dict[int, int] = {}
    counter = itertools.count()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def loop() -> None:
        while time.monotonic() < deadline:
            try:
                status = one(next(counter))
            except httpx.HTTPError:
                status = 0
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + PROBE_TIMEOUT_S * 3)
    return statuses


def wrong_login(board: Board) -> Callable[[int], int]:
    def one(n: int) -> int:
        with httpx.Client(base_url=board.url, timeout=PROBE_TIMEOUT_S * 2) as client:
            page = client.get("/login")
            answer = client.post(
                "/login",
                data={"name": f"nobody{n}", "password": "wrong", "csrf": csrf_of(page.text)},
                headers={"x-forwarded-for": f"10.1.{n // 250 % 250}.{n % 250 + 1}"},
            )
            return answer.status_code

    return one


def junk_token(board: Board) -> Callable[[int], int]:
    def one(n: int) -> int:
        headers = {
            "authorization": f"Bearer junk-token-{n}-{os.urandom(8).hex()}",
            "x-forwarded-for": f"10.2.{n // 250 % 250}.{n % 250 + 1}",
        }
        return httpx.get(
            board.url + "/runs", headers=headers, timeout=PROBE_TIMEOUT_S * 2
        ).status_code

    return one


def open_streams(board: Board, count: int) -> tuple[list[socket.socket], dict[int, int]]:
    host, port = board.url.removeprefix("http://").split(":")
    request = (
        f"GET /runs/{board.run_id}/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Cookie: loopkit_board={board.cookie}\r\n\r\n"
    ).encode()
    sockets: list[socket.socket] = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S)
        sock.sendall(request)
        sockets.append(sock)
    statuses: dict[int, int] = {}
    for sock in sockets:
        try:
            head = sock.recv(64)
            status = int(head.split(b" ", 2)[1]) if head else 0
        except (OSError, ValueError, IndexError):
            status = 0
        statuses[status] = statuses.get(status, 0) + 1
    return sockets, statuses


def summary(times: list[float | None]) -> str:
    answered = [t for t in times if t is not None]
    lost = len(times) - len(answered)
    if not answered:
        return f"no answer ({lost} probes lost)"
    ordered = sorted(answered)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    over = sum(1 for t in answered if t > 1000)
    text = f"{statistics.median(answered):7.0f} {p95:7.0f} {max(answered):7.0f}"
    return text + f" {over:3}/{len(times):<3}" + (f" ({lost} lost)" if lost else "")


def run_side(folder: Path, src: Path | None) -> list[tuple[str, str, str, int]]:
    board = Board(folder, src)
    rows: list[tuple[str, str, str, int]] = []
    try:
        with probing(board) as times:
            time.sleep(PHASE_S / 2)
        rows.append(("idle", summary(times), "", board.threads()))
        with probing(board) as times:
            statuses = attack(16, wrong_login(board), PHASE_S)
        rows.append(
            ("wrong logins", summary(times), str(sorted(statuses.items())), board.threads())
        )
        with probing(board) as times:
            statuses = attack(10, junk_token(board), PHASE_S)
        rows.append(("junk tokens", summary(times), str(sorted(statuses.items())), board.threads()))
        with probing(board) as times:
            sockets, statuses = open_streams(board, 1000)
            time.sleep(PHASE_S)
            during = board.threads()
            for sock in sockets:
                sock.close()
        rows.append(("1,000 streams", summary(times), str(sorted(statuses.items())), during))
        with probing(board) as times:
            time.sleep(PHASE_S / 2)
        rows.append(("after", summary(times), "", board.threads()))
    finally:
        board.stop()
    return rows


def test_pages_answer_while_the_board_is_flooded(tmp_path: Path) -> None:
    old_src = tmp_path / "old"
    old_src.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", OLD, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(old_src)], input=archive.stdout, check=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    sides = {
        "new": run_side(tmp_path / "new", None),
        "old": run_side(tmp_path / "old-board", old_src / "src"),
    }
    print(
        f"\nload before: {' '.join(load)}; after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
    )
    print(
        f"{'phase':15} {'side':4} {'median':>7} {'p95':>7} {'max':>7} {'>1 s':>7}"
        "  threads  attack statuses    (probes: GET /login and GET /, ms)"
    )
    for phase in range(len(sides["new"])):
        for side, rows in sides.items():
            name, probes, attacked, threads = (
                rows[phase] if phase < len(rows) else ("?", "", "", -1)
            )
            print(f"{name:15} {side:4} {probes:38} {threads:5}  {attacked}")
