"""``run_forked_on_desktop``: a callable run in a child forked on a headless desktop, with the
session's contract (its status, signals passed on, the child dies with its parent, nothing left).

Each case runs in a fresh interpreter (a script written to the test's folder), so the fork is
taken from a process with one thread, as the demo's is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopkit_ui.testing import desktop_available
from tests.demo.helpers import carrying, survivors

pytestmark = [
    pytest.mark.ui,
    pytest.mark.integration,
    pytest.mark.skipif(desktop_available() is not None, reason=str(desktop_available())),
]

HEAD = """
import os, signal, subprocess, sys, time
from pathlib import Path
from loopkit_ui.session_fork import can_fork, run_forked_on_desktop
here = Path(sys.argv[1])
"""


def run_script(tmp_path: Path, body: str, **popen: object) -> subprocess.Popen[str]:
    script = tmp_path / "case.py"
    script.write_text(HEAD + textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env["FORK_TEST_TAG"] = str(tmp_path)  # every process of the case carries it
    return subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,  # type: ignore[call-overload]
    )


def test_the_work_runs_on_the_desktop_and_its_status_comes_back(tmp_path: Path) -> None:
    proc = run_script(
        tmp_path,
        """
        def work():
            comm = Path("/proc/self/comm").read_text().strip()
            print("child", os.getpid() != PARENT, comm, os.environ.get("DISPLAY", ""),
                  os.environ.get("EXTRA"), flush=True)
            # Something on the desktop the teardown must end: an X client that stays.
            subprocess.Popen(["sleep", "300"])
            return 7

        PARENT = os.getpid()
        assert can_fork()
        status = run_forked_on_desktop(work, env={"EXTRA": "given"}, name="a-very-long-run-name")
        print("status", status, os.environ.get("DISPLAY"), os.environ.get("EXTRA"), flush=True)
        """,
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    child, status = out.splitlines()
    # its own process name (15 bytes at most), the desktop's display, the variables given
    assert child.startswith("child True a-very-long-run :") and child.endswith(" given"), child
    assert status == "status 7 None None"  # this process's environment is its own
    assert survivors(carrying(str(tmp_path)) - {proc.pid}, within=10) == []


@pytest.mark.parametrize(
    ("ending", "status"),
    [
        ("os.kill(os.getpid(), signal.SIGKILL)", 128 + signal.SIGKILL),
        ("raise RuntimeError('broken work')", 1),
        ("raise SystemExit(3)", 3),
        ("raise KeyboardInterrupt", 130),
    ],
)
def test_how_the_child_ends_is_its_status(tmp_path: Path, ending: str, status: int) -> None:
    proc = run_script(
        tmp_path,
        f"""
        def work():
            subprocess.Popen(["sleep", "300"])
            {ending}

        print("status", run_forked_on_desktop(work), flush=True)
        """,
    )
    out, err = proc.communicate(timeout=120)
    assert out.strip() == f"status {status}", err
    assert ("RuntimeError: broken work" in err) == ("RuntimeError" in ending)
    assert survivors(carrying(str(tmp_path)) - {proc.pid}, within=10) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_is_passed_on_to_the_child(tmp_path: Path, signum: int) -> None:
    proc = run_script(
        tmp_path,
        """
        def work():
            def stop(signum, frame):
                (here / "stopped").write_text(str(signum))
                raise SystemExit(130)
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, stop)
            (here / "working").write_text("")
            time.sleep(120)
            return 0

        print("status", run_forked_on_desktop(work), flush=True)
        """,
    )
    deadline = time.monotonic() + 120  # generous: a desktop start on a loaded machine
    while not (tmp_path / "working").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert out.strip() == "status 130", err
    assert (tmp_path / "stopped").read_text() == str(signum)
    assert "Traceback" not in err


def test_the_child_and_the_desktop_go_when_the_parent_is_killed(tmp_path: Path) -> None:
    proc = run_script(
        tmp_path,
        """
        def work():
            def stop(signum, frame):
                (here / "told").write_text(str(signum))
                raise SystemExit(130)
            signal.signal(signal.SIGTERM, stop)
            subprocess.Popen(["sleep", "300"])
            (here / "child").write_text(str(os.getpid()))
            time.sleep(120)
            return 0

        run_forked_on_desktop(work)
        """,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "child").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # the pid is written before the file is whole
    child = int((tmp_path / "child").read_text())
    seen = carrying(str(tmp_path)) | {child}
    proc.kill()
    proc.wait(timeout=60)  # not communicate(): what is left of the case holds its pipes
    assert survivors(seen - {proc.pid}) == []
    assert (tmp_path / "told").read_text() == str(signal.SIGTERM)  # PR_SET_PDEATHSIG


def test_a_signal_while_the_desktop_starts_is_130_and_leaves_nothing(tmp_path: Path) -> None:
    import shutil

    bin_dir = tmp_path / "slow-bin"
    bin_dir.mkdir()
    real = shutil.which("Xvfb")
    assert real is not None
    (bin_dir / "Xvfb").write_text(f'#!/bin/sh\nsleep 0.5\nexec {real} "$@"\n')
    (bin_dir / "Xvfb").chmod(0o755)
    script = """
        def work():
            (here / "ran").write_text("")
            return 0

        print("status", run_forked_on_desktop(work), flush=True)
        """
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    try:
        proc = run_script(tmp_path, script)
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(os.pathsep, 1)[1]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not carrying(str(bin_dir)) - {proc.pid}:
        time.sleep(0.005)
    seen = carrying(str(tmp_path)) - {proc.pid}
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert out.strip() == "status 130", err
    assert "Traceback" not in err
    assert not (tmp_path / "ran").exists()
    assert survivors(seen) == []


def test_can_fork_is_false_with_another_thread(tmp_path: Path) -> None:
    proc = run_script(
        tmp_path,
        """
        import threading
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        print(can_fork(), flush=True)
        try:
            run_forked_on_desktop(lambda: 0)
        except RuntimeError as e:
            print(e, flush=True)
        stop.set()
        """,
    )
    out, err = proc.communicate(timeout=60)
    assert out.splitlines() == [
        "False",
        "run_forked_on_desktop needs Linux and a process with one thread",
    ], err


def test_prepare_runs_while_the_desktop_starts_and_its_work_is_the_childs(
    tmp_path: Path,
) -> None:
    proc = run_script(
        tmp_path,
        """
        import threading

        def prepare():
            import xml.dom.minidom  # noqa: F401  (a module nothing else here loads)

        def broken():
            raise RuntimeError("prepare failed")

        def work():
            print("child", "xml.dom.minidom" in sys.modules, threading.active_count(), flush=True)
            return 0

        assert "xml.dom.minidom" not in sys.modules
        print("status", run_forked_on_desktop(work, prepare=prepare), flush=True)
        print("status", run_forked_on_desktop(work, prepare=broken), flush=True)
        """,
    )
    out, err = proc.communicate(timeout=120)
    assert out.splitlines() == ["child True 1", "status 0", "child True 1", "status 0"], err
    assert "prepare failed" not in err  # ignored: the work meets such errors itself
