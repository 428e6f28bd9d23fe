"""Real processes: the app and its child are started and stopped; nothing survives the run.

"Gone" is checked without psutil: os.kill(pid, 0) and /proc/<pid>/stat (a zombie counts as gone,
since this container's init may not reap orphans at once).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tools_helpers import Workspace, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools, ProcessGroup, ReadyCheck, pid_alive, run_command

pytestmark = pytest.mark.integration

APP = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    pids_file, ignore_term = sys.argv[1], sys.argv[2] == "1"
    child_code = "import signal, time\\n"
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child_code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    child = subprocess.Popen([sys.executable, "-c", child_code + "time.sleep(600)"])
    with open(pids_file + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid} {os.environ.get('DISPLAY', '')}")
    os.replace(pids_file + ".tmp", pids_file)
    print("app started", flush=True)
    time.sleep(600)
    """
)


def app_config(ws: Workspace, *, ignore_term: bool = False, **overrides: object):  # type: ignore[no-untyped-def]
    script = ws.base / "app.py"
    script.write_text(APP)
    pids = ws.base / "pids.txt"
    return ws.config(
        app_command=[sys.executable, str(script), str(pids), "1" if ignore_term else "0"],
        app_ready=ReadyCheck(kind="file", path=str(pids), timeout_s=30),
        app_env={"DISPLAY": ":42"},
        stop_grace_s=5.0,
        **overrides,
    )


def read_pids(ws: Workspace) -> tuple[int, int, str]:
    parent, child, *display = (ws.base / "pids.txt").read_text().split(" ")
    return int(parent), int(child), " ".join(display)


def wait_until(cond: Callable[[], bool], within_s: float = 20.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


async def test_start_then_stop_ends_app_and_child(workspace: Workspace) -> None:
    async with LocalTools(app_config(workspace)) as local:
        started = await tool_by_name(local, "start_app").invoke({})
        app_pid, child_pid, display = read_pids(workspace)
        assert f"pid {app_pid}" in started
        assert display == ":42"  # the configured environment reached the app
        assert pid_alive(app_pid) and pid_alive(child_pid)
        again = await tool_by_name(local, "start_app").invoke({})
        assert "already running" in again and f"pid {app_pid}" in again
        stopped = await tool_by_name(local, "stop_app").invoke({})
        assert f"pid {app_pid}" in stopped and "stopped" in stopped
        assert not pid_alive(app_pid) and not pid_alive(child_pid)
        assert "not running" in await tool_by_name(local, "stop_app").invoke({})


async def test_stop_kills_what_ignores_sigterm(workspace: Workspace) -> None:
    cfg = app_config(workspace, ignore_term=True)
    cfg.stop_grace_s = 0.3
    async with LocalTools(cfg) as local:
        await local.start_app()
        app_pid, child_pid, _ = read_pids(workspace)
        stopped = await local.stop_app()
        assert "was killed" in stopped
        assert not pid_alive(app_pid) and not pid_alive(child_pid)


async def test_a_run_that_raises_leaves_nothing_behind(workspace: Workspace) -> None:
    with pytest.raises(RuntimeError, match="the run broke"):
        async with LocalTools(app_config(workspace)) as local:
            await local.start_app()
            app_pid, child_pid, _ = read_pids(workspace)
            raise RuntimeError("the run broke")
    assert not pid_alive(app_pid) and not pid_alive(child_pid)


async def test_a_cancelled_run_leaves_nothing_behind(workspace: Workspace) -> None:
    started = asyncio.Event()

    async def run() -> None:
        async with LocalTools(app_config(workspace)) as local:
            await local.start_app()
            started.set()
            await asyncio.sleep(600)

    task = asyncio.create_task(run())
    await asyncio.wait_for(started.wait(), 30)
    app_pid, child_pid, _ = read_pids(workspace)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not pid_alive(app_pid) and not pid_alive(child_pid)


DRIVER = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys
    from loopkit_tools import LocalTools, ReadyCheck, ToolsConfig
    cfg = ToolsConfig.model_validate_json(sys.argv[1])
    async def main():
        local = LocalTools(cfg)
        await local.start_app()
        print(json.dumps({"ready": True}), flush=True)
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        await asyncio.sleep(600)
    asyncio.run(main())
    """
)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_the_python_process_dying_takes_the_app_along(workspace: Workspace, how: str) -> None:
    """The runner itself is killed (no atexit for SIGKILL): the group guard still ends the app."""
    cfg = app_config(workspace, ignore_term=False)
    driver = workspace.base / "driver.py"
    driver.write_text(DRIVER)
    proc = subprocess.run(
        [sys.executable, str(driver), cfg.model_dump_json(), how],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(proc.stdout.splitlines()[0]) == {"ready": True}, proc.stderr
    assert proc.returncode < 0  # it really died by the signal
    app_pid, child_pid, _ = read_pids(workspace)
    gone = wait_until(lambda: not pid_alive(app_pid) and not pid_alive(child_pid))
    assert gone, f"app {app_pid} or its child {child_pid} outlived the killed runner"


def test_normal_interpreter_exit_stops_the_app(workspace: Workspace) -> None:
    """A script that forgets `async with` and just ends: the atexit hook stops the app."""
    cfg = app_config(workspace)
    driver = workspace.base / "forgetful.py"
    driver.write_text(
        "import asyncio, sys\nfrom loopkit_tools import LocalTools, ToolsConfig\n"
        "local = LocalTools(ToolsConfig.model_validate_json(sys.argv[1]))\n"
        "asyncio.run(local.start_app())\n"
    )
    proc = subprocess.run(
        [sys.executable, str(driver), cfg.model_dump_json()], capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    app_pid, child_pid, _ = read_pids(workspace)
    assert wait_until(lambda: not pid_alive(app_pid) and not pid_alive(child_pid))


async def test_app_crashing_at_start_reports_its_error(workspace: Workspace) -> None:
    script = workspace.base / "crash.py"
    script.write_text("import sys\nprint('starting')\n\nraise ValueError('bad config value')\n")
    cfg = workspace.config(
        app_command=[sys.executable, str(script)],
        app_ready=ReadyCheck(kind="delay", delay_s=20),
    )
    async with LocalTools(cfg) as local:
        with pytest.raises(ToolError) as info:
            await tool_by_name(local, "start_app").invoke({})
        text = str(info.value)
        assert text.startswith("The app exited at start with code 1.")
        assert "line 4" in text and "ValueError: bad config value" in text
        assert "starting" not in text  # only the relevant lines
        assert local.app_pid is None


async def test_ready_command_and_ready_timeout(workspace: Workspace) -> None:
    flag = workspace.base / "flag"
    cfg = app_config(workspace)
    cfg.app_ready = ReadyCheck(
        kind="command",
        command=[
            sys.executable,
            "-c",
            f"import os,sys; sys.exit(0 if os.path.exists({str(flag)!r}) else 1)",
        ],
        timeout_s=0.6,
        interval_s=0.05,
    )
    async with LocalTools(cfg) as local:
        with pytest.raises(ToolError, match="did not become ready in time and was stopped"):
            await local.start_app()
        app_pid, child_pid, _ = read_pids(workspace)
        assert not pid_alive(app_pid) and not pid_alive(child_pid)
        flag.write_text("")
        cfg.app_ready.timeout_s = 30
        assert "readiness check passed" in await local.start_app()
        assert local.app_pid is not None


async def test_window_readiness_asks_the_check_it_was_given(workspace: Workspace) -> None:
    """Kind ``window`` asks the WindowCheck that whoever assembles the tools passes in (the UI
    package's wait_app.window_shown in the demo; tests/ui/test_wait_app.py runs that one on a
    real desktop); without one, start_app says what to pass and leaves no process behind."""
    cfg = app_config(workspace)
    cfg.app_ready = ReadyCheck(kind="window", app_name="the_app", timeout_s=30, interval_s=0.05)
    asked: list[tuple[str, float]] = []

    def shown_once_started(app_name: str, timeout: float) -> bool:
        asked.append((app_name, timeout))
        return (workspace.base / "pids.txt").exists()

    async with LocalTools(cfg, window_check=shown_once_started) as local:
        assert "readiness check passed" in await local.start_app()
        assert asked and {name for name, _ in asked} == {"the_app"}
        assert all(0 < within <= 3.0 for _, within in asked)  # each check waits at most 3 s
    (workspace.base / "pids.txt").unlink()
    async with LocalTools(cfg) as local:
        with pytest.raises(ToolError, match="app_ready kind 'window' needs a window check"):
            await local.start_app()
        assert local.app_pid is None
    if (workspace.base / "pids.txt").exists():  # it got that far before it was stopped
        app_pid, child_pid, _ = read_pids(workspace)
        assert wait_until(lambda: not pid_alive(app_pid) and not pid_alive(child_pid))


async def test_missing_program_is_a_clear_error(workspace: Workspace) -> None:
    cfg = workspace.config(app_command=["/nonexistent/program-xyz"])
    async with LocalTools(cfg) as local:
        with pytest.raises(ToolError, match="no such program"):
            await local.start_app()


def test_pid_alive_sees_a_real_process() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not pid_alive(p.pid)


def _guards_of(pid: int) -> list[int]:
    """The group guards this process started (their command line holds the guard's code)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid and b"os.killpg(pgid, signal.SIGTERM)" in cmdline:
                found.append(int(entry.name))
    return found


async def test_one_guard_watches_every_group(workspace: Workspace) -> None:
    """Each command used to start a guard interpreter of its own (tens of milliseconds for a
    git call); one guard now watches them all and forgets a group once it is stopped."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    first = await ProcessGroup.start(sleeper, cwd=workspace.repo)
    second = await ProcessGroup.start(sleeper, cwd=workspace.repo)
    try:
        done = await run_command(
            [sys.executable, "-c", "print('ok')"], cwd=workspace.repo, env=None, timeout_s=30
        )
        assert done.exit_code == 0 and done.output.strip() == "ok"
        assert len(_guards_of(os.getpid())) == 1
    finally:
        await first.stop(1.0)
        await second.stop(1.0)
    assert not first.alive() and not second.alive()


_REPLACED_GUARD_DRIVER = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys
    from pathlib import Path
    from loopkit_tools import ProcessGroup
    def guards():
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    cmdline = (entry / "cmdline").read_bytes()
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == os.getpid() and b"os.killpg(pgid, signal.SIGTERM)" in cmdline:
                    found.append(int(entry.name))
        return found
    # The leader gets PR_SET_PDEATHSIG; its child only has the guard to end it.
    CODE = (
        "import subprocess, sys, time; from pathlib import Path; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        "Path(sys.argv[1]).write_text(str(child.pid)); time.sleep(120)"
    )
    async def child_of(name):
        group = await ProcessGroup.start([sys.executable, "-c", CODE, name], cwd=".")
        while not Path(name).exists() or not Path(name).read_text():
            await asyncio.sleep(0.01)
        return int(Path(name).read_text())
    async def main():
        first = await child_of("first.pid")
        (old,) = guards()
        os.kill(old, signal.SIGKILL)  # the guard dies from outside
        while old in guards():
            await asyncio.sleep(0.01)
        second = await child_of("second.pid")  # starts a new guard, told both groups
        print(json.dumps({"pids": [first, second], "guards": len(guards())}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    asyncio.run(main())
    """
)


def test_a_guard_killed_from_outside_is_replaced_and_told_every_group(
    workspace: Workspace,
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _REPLACED_GUARD_DRIVER],
        cwd=workspace.repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr
    report = json.loads(proc.stdout.splitlines()[0])
    assert report["guards"] == 1
    first, second = report["pids"]
    assert wait_until(lambda: not pid_alive(first) and not pid_alive(second))
