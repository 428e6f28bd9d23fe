"""The UI server over HTTP, as an attacker and a client see it: the real server process on
loopback, raw requests with forged headers, and loopkit's own MCP client with the token.

Every request kind that reaches a tool or a session (a stateless ``tools/call`` in one POST,
``initialize``, a call inside a session, its GET stream and its DELETE) is sent without a
token, with wrong tokens, with the right token and a forged Host, and with the right token and
a forged Origin: none may get through, and the app must show no trace of the clicks they asked
for. The same holds on 127.0.0.2, 127.1, [::1] and 0.0.0.0 (with --allow-remote).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import secrets
import socket
import stat
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from loopkit.mcp import MCPServerConfig
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import running_app
from tests.ports import closed_port

from . import http_probe as hp
from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def _ipv6_loopback() -> str | None:
    """None when ::1 can be bound here, else why not."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError as error:
        return f"this machine has no IPv6 loopback (binding [::1] failed: {error})"
    return None


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    second_line: str
    target: hp.Target
    stderr: Path


def _lines(process: subprocess.Popen[str], stderr: Path, count: int) -> list[str]:
    """The first ``count`` lines the server prints (a thread reads them: a dead or silent
    server fails the test after a minute instead of hanging it)."""
    assert process.stdout is not None
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        lines = pool.submit(lambda: [process.stdout.readline() for _ in range(count)])  # type: ignore[union-attr]
        try:
            got = lines.result(timeout=60)
        except concurrent.futures.TimeoutError:
            process.kill()
            got = lines.result()
    assert all(got), f"the server printed {got}; stderr:\n{stderr.read_text()}"
    return [line.strip() for line in got]


@contextlib.contextmanager
def serve(
    args: list[str], env: dict[str, str], log: Path, *, connect: str | None = None,
    host: str | None = None,
) -> Iterator[Served]:  # fmt: skip
    """The real server process with ``args``; ``connect``/``host`` override where the probe
    connects and the Host a legitimate client sends (default: the printed URL's)."""
    with log.open("w") as errors:
        process = subprocess.Popen([PYTHON, "-m", "loopkit_ui.server", *args], env=env,
                                   stdout=subprocess.PIPE, stderr=errors, text=True)  # fmt: skip
    try:
        first, second = _lines(process, log, 2)
        url = first.split()[-1]
        parts = urlsplit(url)
        assert parts.hostname and parts.port
        legitimate = f"{host}:{parts.port}" if host else parts.netloc
        target = hp.Target(connect or parts.hostname, parts.port, legitimate)
        yield Served(process, url, second, target, log)
    finally:
        process.terminate()
        process.wait(15)


@pytest.fixture
def token_file(tmp_path: Path) -> tuple[Path, str]:
    """A token file the caller made (as a script would): 0600 in a 0700 folder."""
    folder = tmp_path / "secret"
    folder.mkdir(mode=0o700)
    path = folder / "token"
    token = secrets.token_urlsafe(32)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path, token


@pytest.fixture
def app(headless_desktop: HeadlessDesktop, tmp_path: Path) -> Iterator[None]:
    env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(tmp_path / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=env):
        yield


def _server_args(address: str, token_path: Path, *extra: str) -> list[str]:
    return ["--http", address, "--token-file", str(token_path), "--app-name", "invoice_app",
            "--attach-timeout", "20", *extra]  # fmt: skip


Probe = Callable[[str | None, dict[str, str]], hp.Reply]


def _kinds(target: hp.Target, session: str) -> dict[str, Probe]:
    click = {"target": "AddItemButton"}
    return {
        "stateless tools/call": lambda host, auth: hp.modern_call(
            target, "ui_click", click, host=host, auth=auth
        ),
        "initialize": lambda host, auth: hp.initialize(target, host=host, auth=auth),
        "session tools/call": lambda host, auth: hp.session_call(
            target, session, "ui_click", click, host=host, auth=auth
        ),
        "session stream (GET)": lambda host, auth: hp.session_stream(
            target, session, host=host, auth=auth
        ),
        "session end (DELETE)": lambda host, auth: hp.session_end(
            target, session, host=host, auth=auth
        ),
    }


def _attack(target: hp.Target, token: str) -> Counter[str]:
    """Every forged request against every request kind; returns tried/through counts and
    fails on the first one that got through or was answered with the wrong refusal."""
    right = hp.bearer(token)
    session = hp.open_session(target, right)
    tally: Counter[str] = Counter()
    for kind, probe in _kinds(target, session).items():
        for auth in hp.wrong_tokens(token):
            reply = probe(target.host, auth)
            tally["token tried"] += 1
            tally["token through"] += reply.accepted
            assert reply.status == 401, (kind, auth.keys(), reply)
            assert reply.headers.get("www-authenticate", "").startswith("Bearer"), reply
        for host in hp.forged_hosts(target):
            reply = probe(host, right)
            tally["Host tried"] += 1
            tally["Host through"] += reply.accepted
            assert reply.status in (400, 421), (kind, host, reply)
        for origin in hp.forged_origins(target):
            reply = probe(target.host, {**right, "Origin": origin})
            tally["Origin tried"] += 1
            tally["Origin through"] += reply.accepted
            assert reply.status == 403, (kind, origin, reply)
    # The forged DELETEs did not end the session: it still answers its owner.
    survived = hp.session_call(target, session, "ui_list_windows", {}, host=target.host,
                               auth=right)  # fmt: skip
    assert survived.status == 200, survived
    return tally


def _report(where: str, tally: Counter[str]) -> None:
    print(f"\n{where}: " + ", ".join(
        f"{what} {tally[what + ' tried']} tried, {tally[what + ' through']} through"
        for what in ("token", "Host", "Origin")))  # fmt: skip


def _legitimate_calls(target: hp.Target, token: str) -> None:
    """The right token with the real Host (and the server's own Origin) works, raw."""
    right = hp.bearer(token)
    own_origin = {**right, "Origin": f"http://{target.host}"}
    for auth in (right, own_origin):
        reply = hp.modern_call(target, "ui_get_text", {"target": "TotalLabel"},
                               host=target.host, auth=auth)  # fmt: skip
        assert reply.status == 200, reply
        assert reply.json()["result"]["content"][0]["text"] == "Total: 250.00", reply


def test_loopback_server_refuses_every_forged_request(
    headless_desktop: HeadlessDesktop, app: None, token_file: tuple[Path, str], tmp_path: Path
) -> None:
    path, token = token_file
    env = headless_desktop.child_env()
    with serve(_server_args("127.0.0.1:0", path), env, tmp_path / "server.err") as served:
        assert served.second_line == f"bearer token from {path}"
        _legitimate_calls(served.target, token)
        tally = _attack(served.target, token)
        _report("127.0.0.1", tally)
        assert sum(tally[k] for k in tally if k.endswith("through")) == 0
        assert tally["token tried"] + tally["Host tried"] + tally["Origin tried"] >= 150

        # loopkit's own client, configured as a card runner's TOML would be, with the token.
        async def use() -> tuple[int, str, str]:
            config = MCPServerConfig(url=served.url, headers=hp.bearer(token))
            async with config.connect() as client:
                tools = {tool.name: tool for tool in await client.list_tools()}
                total = await tools["ui_get_text"].invoke({"target": "TotalLabel"})
                # None of the forged clicks landed: the table still has its two rows.
                third_row = await client.call_tool(
                    "ui_get_cell", {"table": "ItemsTable", "row": 2, "column": 0}
                )
                assert {"ui_click", "ui_snapshot", "ui_run_steps"} <= set(tools), sorted(tools)
                return len(tools), total, str(third_row.is_error)

        count, total, third_row_missing = asyncio.run(use())
        # test_outside_client.py checks that every tool listed is called; here: all are there.
        assert count >= 39 and total == "Total: 250.00"
        assert third_row_missing == "True"
    stderr = served.stderr.read_text()
    assert token not in stderr and "Traceback" not in stderr


@pytest.mark.parametrize(
    ("address", "connect", "host", "extra"),
    [
        ("127.0.0.2:0", None, None, []),
        ("127.1:0", "127.0.0.1", None, []),
        ("[::1]:0", "::1", None, []),
        ("0.0.0.0:0", "127.0.0.1", "ui.test", ["--allow-remote", "--allow-host", "ui.test"]),
    ],
    ids=["127.0.0.2", "127.1", "ipv6-loopback", "0.0.0.0-allow-remote"],
)
def test_every_bound_address_checks_token_host_and_origin(
    headless_desktop: HeadlessDesktop,
    app: None,
    token_file: tuple[Path, str],
    tmp_path: Path,
    address: str,
    connect: str | None,
    host: str | None,
    extra: list[str],
) -> None:
    if address.startswith("[::1]") and _ipv6_loopback():
        pytest.skip(str(_ipv6_loopback()))
    path, token = token_file
    env = headless_desktop.child_env()
    log = tmp_path / "server.err"
    with serve(_server_args(address, path, *extra), env, log, connect=connect, host=host) as served:
        if address.startswith("127.1"):
            assert served.url.startswith("http://127.0.0.1:"), served.url
        _legitimate_calls(served.target, token)
        tally = _attack(served.target, token)
        _report(address, tally)
        assert sum(tally[k] for k in tally if k.endswith("through")) == 0
    assert token not in log.read_text()


def test_generated_token_is_private_printed_by_path_and_removed(
    headless_desktop: HeadlessDesktop, app: None, tmp_path: Path
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {**headless_desktop.child_env(), "XDG_RUNTIME_DIR": str(runtime)}
    args = ["--http", "127.0.0.1:0", "--app-name", "invoice_app", "--attach-timeout", "20"]
    with serve(args, env, tmp_path / "server.err") as served:
        assert served.second_line.startswith("bearer token in "), served.second_line
        path = Path(served.second_line.split()[3])
        assert path.parent.parent == runtime
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        token = path.read_text().strip()
        assert len(token) >= 32
        assert token not in served.url + served.second_line
        assert hp.modern_call(served.target, "ui_list_windows", {}, host=served.target.host,
                              auth={}).status == 401  # fmt: skip
        _legitimate_calls(served.target, token)
    assert token not in served.stderr.read_text()
    assert not path.exists() and not path.parent.exists()  # removed at exit
    assert list(runtime.iterdir()) == []


@pytest.mark.parametrize("address", ["0.0.0.0", "[::]", "192.0.2.10"])
def test_non_loopback_address_needs_allow_remote(address: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with closed_port() as port:  # held: no other process listens there meanwhile
        result = subprocess.run(
            [PYTHON, "-m", "loopkit_ui.server", "--http", f"{address}:{port}", "--output-dir", str(out)],
            capture_output=True, text=True, timeout=60, env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},
        )  # fmt: skip
        assert result.returncode == 2, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr + result.stdout, result.stderr
        assert f"{address}:{port}" in lines[0] and "--allow-remote" in lines[0], lines
        assert result.stdout == ""
        with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
            probe.connect(("127.0.0.1", port))  # nothing listens
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []
