"""``python -m loopkit_ui.server`` with bad input, as a real subprocess: exit status 2, one line
on stderr naming the input, no traceback, and nothing started or created (no listener, no
launched app, no output folder, no token file)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ports import closed_port
from tests.processes import processes_with, unique_marker

from .conftest import PYTHON

pytestmark = pytest.mark.integration

MARKER = "LOOPKIT_UI_BAD_INPUT_TEST"


@dataclass
class Sandbox:
    """A temp folder with the odd files the cases point at."""

    root: Path

    @property
    def out(self) -> Path:  # must never be created by a refused command
        return self.root / "out-not-created"

    @property
    def runtime(self) -> Path:  # XDG_RUNTIME_DIR: a generated token file would land here
        return self.root / "runtime"

    def file(self, name: str, content: bytes = b"x", mode: int = 0o600) -> str:
        path = self.root / name
        path.write_bytes(content)
        path.chmod(mode)
        return str(path)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path)
    box.runtime.mkdir(mode=0o700)
    (tmp_path / "folder").mkdir()
    yield box


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        yield taken.getsockname()[1]


def _other_users_file(box: Sandbox) -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    path = box.file("others-token", b"0123456789abcdefghijklmnop")
    os.chown(path, 65534, 65534)
    return path


TOKEN = b"0123456789abcdefghijklmnop"
# (id, arguments (a function of the sandbox), the text the one line must contain, launch extra)
Case = tuple[str, Callable[[Sandbox], list[str]], str, bool]
CASES: list[Case] = [
    # --http: every malformed form, a non-loopback address, an address that cannot be bound
    ("http-port-only", lambda b: ["--http", "8765"], "--http '8765'", True),
    ("http-host-only", lambda b: ["--http", "127.0.0.1"], "--http '127.0.0.1'", True),
    ("http-empty-port", lambda b: ["--http", "127.0.0.1:"], "--http '127.0.0.1:'", True),
    ("http-empty-host", lambda b: ["--http", ":8765"], "--http ':8765'", True),
    ("http-empty", lambda b: ["--http", ""], "--http ''", True),
    ("http-port-name", lambda b: ["--http", "127.0.0.1:http"], "127.0.0.1:http", True),
    ("http-port-range", lambda b: ["--http", "127.0.0.1:65536"], "127.0.0.1:65536", True),
    ("http-port-negative", lambda b: ["--http", "127.0.0.1:-1"], "127.0.0.1:-1", True),
    ("http-port-unicode", lambda b: ["--http", "127.0.0.1:８７"], "127.0.0.1:８７", True),
    ("http-ipv6-bare", lambda b: ["--http", "::1:8765"], "::1:8765", True),
    ("http-ipv6-no-port", lambda b: ["--http", "[::1]"], "[::1]", True),
    ("http-ipv6-no-colon", lambda b: ["--http", "[::1]8765"], "[::1]8765", True),
    ("http-ipv6-open", lambda b: ["--http", "[::1:8765"], "[::1:8765", True),
    ("http-ipv6-bad", lambda b: ["--http", "[::1::1]:8765"], "[::1::1]:8765", True),
    ("http-brackets-v4", lambda b: ["--http", "[127.0.0.1]:8765"], "[127.0.0.1]:8765", True),
    (
        "http-unresolvable",
        lambda b: ["--http", "no-such-host.invalid:8765"],
        "no-such-host.invalid",
        True,
    ),
    ("http-three-parts", lambda b: ["--http", "127.0.0.1:87:65"], "127.0.0.1:87:65", True),
    ("http-any-v4", lambda b: ["--http", "0.0.0.0:8765"], "--allow-remote", True),
    ("http-any-v6", lambda b: ["--http", "[::]:8765"], "--allow-remote", True),
    ("http-lan", lambda b: ["--http", "192.0.2.10:8765"], "192.0.2.10", True),
    (
        "http-lan-unbindable",
        lambda b: ["--http", "192.0.2.10:8765", "--allow-remote"],
        "cannot listen on 192.0.2.10:8765",
        True,
    ),
    ("http-newline", lambda b: ["--http", "127.0.0.1:80\n80"], "127.0.0.1:80\\n80", True),
    (
        "allow-host-port",
        lambda b: ["--http", "127.0.0.1:0", "--allow-host", "a.example:80"],
        "a.example:80",
        True,
    ),
    (
        "allow-host-scheme",
        lambda b: ["--http", "127.0.0.1:0", "--allow-host", "http://a"],
        "http://a",
        True,
    ),
    (
        "allow-host-empty",
        lambda b: ["--http", "127.0.0.1:0", "--allow-host", ""],
        "--allow-host ''",
        True,
    ),
    ("allow-remote-stdio", lambda b: ["--allow-remote"], "--allow-remote", True),
    ("allow-host-stdio", lambda b: ["--allow-host", "a.example"], "--allow-host", True),
    # --token-file: missing, not a file, readable by others, empty, not one token, too short
    ("token-stdio", lambda b: ["--token-file", b.file("t", TOKEN)], "--token-file", True),
    (
        "token-missing",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", str(b.root / "none")],
        "none': no such file",
        True,
    ),
    (
        "token-folder",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", str(b.root / "folder")],
        "folder': not a regular file",
        True,
    ),
    (
        "token-world-readable",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", TOKEN, 0o644)],
        "chmod 600",
        True,
    ),
    (
        "token-group-readable",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", TOKEN, 0o640)],
        "mode 0640",
        True,
    ),
    (
        "token-empty",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", b"")],
        "empty",
        True,
    ),
    (
        "token-blank",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", b" \n\t\n")],
        "empty",
        True,
    ),
    (
        "token-short",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", b"short\n")],
        "16 or more",
        True,
    ),
    (
        "token-spaces",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", b"0123456789 abcdefghij")],
        "visible ASCII",
        True,
    ),
    (
        "token-binary",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", b"\xff\xfe" * 20)],
        "visible ASCII",
        True,
    ),
    (
        "token-huge",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", b.file("t", b"a" * 5000)],
        "5000 bytes",
        True,
    ),
    (
        "token-others",
        lambda b: ["--http", "127.0.0.1:0", "--token-file", _other_users_file(b)],
        "another user",
        True,
    ),
    # the app: --pid, --launch, --launch-cwd, --backend
    ("pid-word", lambda b: ["--pid", "abc"], "--pid", True),
    ("pid-zero", lambda b: ["--pid", "0"], "--pid 0", True),
    ("pid-negative", lambda b: ["--pid", "-5"], "--pid -5", True),
    ("pid-dead", lambda b: ["--pid", str(_dead_pid())], "no process with this id", True),
    ("launch-missing", lambda b: ["--launch", "/no/such/command"], "/no/such/command", False),
    (
        "launch-not-on-path",
        lambda b: ["--launch", "no-such-program-xyz --flag"],
        "no-such-program-xyz",
        False,
    ),
    ("launch-empty", lambda b: ["--launch", ""], "--launch ''", False),
    ("launch-quoting", lambda b: ["--launch", "'python -m app"], "'python -m app", False),
    ("launch-folder", lambda b: ["--launch", str(b.root / "folder")], "folder", False),
    (
        "launch-not-executable",
        lambda b: ["--launch", b.file("script.sh", b"#!/bin/sh\n")],
        "not an executable file",
        False,
    ),
    (
        "launch-cwd-missing",
        lambda b: ["--launch", "sleep 300", "--launch-cwd", "/no/such/dir"],
        "/no/such/dir",
        False,
    ),
    ("launch-cwd-alone", lambda b: ["--launch-cwd", str(b.root)], "--launch-cwd", False),
    ("launchable-no-equals", lambda b: ["--launchable", "sleep 300"], "NAME=COMMAND", False),
    ("launchable-no-name", lambda b: ["--launchable", "=sleep 300"], "NAME=COMMAND", False),
    ("launchable-no-command", lambda b: ["--launchable", "app="], "NAME=COMMAND", False),
    (
        "launchable-twice",
        lambda b: ["--launchable", "a=sleep 1", "--launchable", "a=sleep 2"],
        "given twice",
        False,
    ),
    (
        "launchable-missing-program",
        lambda b: ["--launchable", "a=no-such-program-x"],
        "not found on PATH",
        False,
    ),
    ("snapshots-unknown", lambda b: ["--snapshots", "some"], "--snapshots", False),
    ("backend-unknown", lambda b: ["--backend", "gtk"], "--backend", True),
    (
        "backend-other-os",
        lambda b: ["--backend", "uia" if sys.platform != "win32" else "atspi"],
        "--backend",
        True,
    ),
    # numbers
    ("timeout-word", lambda b: ["--timeout", "soon"], "--timeout", True),
    ("timeout-zero", lambda b: ["--timeout", "0"], "--timeout", True),
    ("timeout-negative", lambda b: ["--timeout", "-3"], "--timeout", True),
    ("timeout-nan", lambda b: ["--timeout", "nan"], "--timeout", True),
    ("timeout-inf", lambda b: ["--timeout", "inf"], "--timeout", True),
    ("attach-timeout-negative", lambda b: ["--attach-timeout", "-1"], "--attach-timeout", True),
    ("attach-timeout-nan", lambda b: ["--attach-timeout", "nan"], "--attach-timeout", True),
    ("unknown-option", lambda b: ["--port", "8765"], "--port", True),
]
# --output-dir: a file, a file on the way, a place where no folder can be made
OUTPUT_CASES: list[Case] = [
    ("output-file", lambda b: ["--output-dir", b.file("plain")], "plain': is a file", True),
    (
        "output-under-file",
        lambda b: ["--output-dir", str(Path(b.file("plain")) / "sub")],
        "is under",
        True,
    ),
    (
        "output-uncreatable",
        lambda b: ["--output-dir", "/proc/loopkit-ui-test/out"],
        "cannot create the folder",
        True,
    ),
    (
        "output-uncreatable-http",
        lambda b: ["--http", "127.0.0.1:0", "--output-dir", "/proc/loopkit-ui-test"],
        "/proc/loopkit-ui-test",
        True,
    ),
]


def _run_refused(box: Sandbox, args: list[str], expect: str) -> subprocess.CompletedProcess[str]:
    marker = unique_marker(MARKER)  # no other run's process carries it
    env = {**os.environ, "XDG_RUNTIME_DIR": str(box.runtime), MARKER: marker.value}
    env.pop("LOOPKIT_UI_BACKEND", None)
    # stdin at EOF: a server that wrongly started on stdio ends at once instead of waiting.
    result = subprocess.run([PYTHON, "-m", "loopkit_ui.server", *args], env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    shown = f"args {args!r}\nstdout {result.stdout!r}\nstderr {result.stderr!r}"
    assert result.returncode == 2, shown
    assert "Traceback" not in result.stdout + result.stderr, shown
    assert result.stdout == "", shown
    lines = result.stderr.splitlines()
    assert len(lines) == 1, shown
    assert lines[0].startswith("python -m loopkit_ui.server: error: "), shown
    assert expect in lines[0], shown
    # Nothing started, nothing created.
    assert not box.out.exists(), shown
    assert list(box.runtime.iterdir()) == [], shown
    assert sys.platform != "linux" or processes_with(marker) == [], shown
    return result


@pytest.mark.parametrize(("case", "args", "expect", "launch"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(
    sandbox: Sandbox, case: str, args: Callable[[Sandbox], list[str]], expect: str, launch: bool
) -> None:
    # An app to launch and a folder to create ride along: neither may happen.
    extra = ["--launch", "sleep 300"] if launch else []
    _run_refused(sandbox, [*args(sandbox), *extra, "--output-dir", str(sandbox.out)], expect)


@pytest.mark.parametrize(("case", "args", "expect", "launch"), OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])  # fmt: skip
def test_bad_output_dir_is_one_line_and_exit_2(
    sandbox: Sandbox, case: str, args: Callable[[Sandbox], list[str]], expect: str, launch: bool
) -> None:
    _run_refused(sandbox, [*args(sandbox), "--launch", "sleep 300"], expect)


def test_busy_port_is_one_line_and_exit_2(sandbox: Sandbox) -> None:
    for port in _busy_port():
        args = ["--http", f"127.0.0.1:{port}", "--launch", "sleep 300", "--output-dir",
                str(sandbox.out)]  # fmt: skip
        _run_refused(sandbox, args, f"cannot listen on 127.0.0.1:{port}")


def test_refused_address_leaves_no_listener(sandbox: Sandbox) -> None:
    # The port stays held (bound, not listening) so no other process can listen there
    # meanwhile; a server that tried to listen would fail to bind and say so instead of
    # naming --allow-remote.
    with closed_port() as port:
        refused = _run_refused(sandbox, ["--http", f"0.0.0.0:{port}", "--output-dir",
                                         str(sandbox.out)], f"0.0.0.0:{port}")  # fmt: skip
        assert "--allow-remote" in refused.stderr, refused.stderr
        with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
            probe.connect(("127.0.0.1", port))


def test_help_documents_the_exit_codes() -> None:
    result = subprocess.run([PYTHON, "-m", "loopkit_ui.server", "--help"], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for code in ("0 stopped normally", "1 failed", "2 bad input", "130 interrupted"):
        assert code in text, text
    assert "--allow-remote" in text and "--token-file" in text
