"""The UI server process: a hung application times out instead of hanging the server, an
application the server launched itself ends with it, and what it writes only its owner reads."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import UIServerClient, running_app
from tests.processes import processes_with, unique_marker

from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def test_hung_application_times_out_and_recovers(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(tmp_path / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=env) as app:
        args = ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--timeout", "2",
                "--attach-timeout", "20"]  # fmt: skip
        with UIServerClient(args, env=headless_desktop.child_env()) as ui:
            assert ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
            os.kill(app.pid, signal.SIGSTOP)  # the UI thread stops answering
            try:
                start = time.monotonic()
                hung = ui.call("ui_click", target="AddItemButton")
                elapsed = time.monotonic() - start
                assert hung.error, hung
                assert "did not answer in time" in hung.text or "did not finish" in hung.text
                assert elapsed < 10  # bounded by the call timeout, not hanging
                # The server itself still answers.
                assert ui.tools()
            finally:
                os.kill(app.pid, signal.SIGCONT)
            deadline = time.monotonic() + 10
            while True:
                answer = ui.call("ui_click", target="AddItemButton")
                if not answer.error or time.monotonic() > deadline:
                    break
            assert not answer.error and answer["success"], answer
            assert ui.call("ui_get_text", target="ItemsTable", row=2, column=0).text == "New item"


def test_launched_application_ends_with_the_server(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    marker = unique_marker("LOOPKIT_UI_TEST_MARKER")  # no other run's process carries it
    env = headless_desktop.child_env(
        {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(tmp_path / "app.log"),
         marker.name: marker.value}
    )  # fmt: skip
    args = ["-m", "loopkit_ui.server", "--launch", f"{sys.executable} -m invoice_app",
            "--launch-cwd", str(EXAMPLES_DIR), "--attach-timeout", "20"]  # fmt: skip
    with UIServerClient(args, env=env) as ui:
        assert ui.call("ui_get_text", target="SubtotalLabel").text == "Subtotal: 250.00"
        launched = [p for p in processes_with(marker)
                    if Path(f"/proc/{p}/cmdline").read_bytes().endswith(b"-m\0invoice_app\0")]  # fmt: skip
        assert len(launched) == 1
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and launched[0] in processes_with(marker):
        time.sleep(0.1)
    assert launched[0] not in processes_with(marker)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_trees_and_screenshots_are_private(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    # As the demo runs it: LOOPKIT_UI_OUTPUT_DIR names a folder that does not exist yet.
    run_dir = tmp_path / "run"
    out = run_dir / "ui"
    env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(tmp_path / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=env):
        args = ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--attach-timeout", "20"]
        server_env = headless_desktop.child_env({"LOOPKIT_UI_OUTPUT_DIR": str(out)})
        with UIServerClient(args, env=server_env) as ui:
            written = [Path(ui.call("ui_tree")["path"]), Path(ui.call("ui_screenshot")["path"]),
                       Path(ui.call("ui_tree", format="json")["path"])]  # fmt: skip
            failed = ui.call("ui_screenshot", target="NoSuchElement")
            assert failed.error
        # Without any output folder: a fresh private temp folder.
        default_env = {k: v for k, v in headless_desktop.child_env().items()
                       if k != "LOOPKIT_UI_OUTPUT_DIR"}  # fmt: skip
        with UIServerClient(args, env=default_env) as ui:
            default_tree = Path(ui.call("ui_tree")["path"])
    assert sorted(out.iterdir()) == sorted(written)  # the failed screenshot left no empty file
    for path in (*written, default_tree):
        assert path.stat().st_size > 0
        assert _mode(path) == 0o600, path
    for folder in (out, run_dir, default_tree.parent):
        assert _mode(folder) == 0o700, folder
    assert default_tree.parent.parent == Path(tempfile.gettempdir())
    shutil.rmtree(default_tree.parent)


_INITIALIZE = (
    '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    '"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}\n'
)


def _send_to_a_worker_thread(pid: int, signum: signal.Signals) -> None:
    """Deliver ``signum`` to a thread other than the main one (tgkill), as the kernel may do
    with a process-directed signal: the one blocked reading stdin, say."""
    libc = ctypes.CDLL(None, use_errno=True)
    workers = [int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid]
    assert workers, "the server has no worker thread to receive the signal"
    sys_tgkill = {"x86_64": 234, "aarch64": 131}[platform.machine()]
    assert libc.syscall(sys_tgkill, pid, workers[0], int(signum)) == 0, ctypes.get_errno()


@pytest.mark.parametrize(
    ("transport", "signum", "to_worker"),
    [
        ("stdio", signal.SIGTERM, False),
        ("stdio", signal.SIGHUP, False),
        ("stdio", signal.SIGTERM, True),
        ("stdio", signal.SIGHUP, True),
        ("http", signal.SIGTERM, False),
        ("http", signal.SIGINT, False),
    ],
    ids=[
        "stdio-SIGTERM",
        "stdio-SIGHUP",
        "stdio-SIGTERM-to-a-worker-thread",
        "stdio-SIGHUP-to-a-worker-thread",
        "http-SIGTERM",
        "http-SIGINT",
    ],
)
def test_stop_signal_ends_cleanly_with_130(
    tmp_path: Path, transport: str, signum: signal.Signals, to_worker: bool
) -> None:
    marker = unique_marker("LOOPKIT_UI_SIGNAL_TEST")  # no process of another run matches it
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), marker.name: marker.value}
    args = [PYTHON, "-m", "loopkit_ui.server", "--launch", "sleep 300", "--app-name", "none"]
    if transport == "http":
        args += ["--http", "127.0.0.1:0"]
    server = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        if transport == "http":
            assert server.stdout.readline().startswith("loopkit-ui MCP server on http://")
            token_path = Path(server.stdout.readline().split()[3])
            assert token_path.exists()
        else:  # answering the handshake: it is serving (and holds stdin open)
            server.stdin.write(_INITIALIZE)
            server.stdin.flush()
            assert '"id":1' in server.stdout.readline().replace(" ", "")
        launched = [pid for pid in processes_with(marker) if pid != server.pid]
        assert len(launched) == 1  # the sleep it launched
        if to_worker:
            _send_to_a_worker_thread(server.pid, signum)
        else:
            server.send_signal(signum)
        assert server.wait(20) == 130
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        deadline = time.monotonic() + 10
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = processes_with(marker)
        for pid in left:  # a failed run leaves nothing behind either
            os.kill(pid, signal.SIGKILL)
    assert "Traceback" not in server.stderr.read()
    assert left == []  # the launched app ended with it
    assert list(runtime.iterdir()) == []  # the generated token file is gone
