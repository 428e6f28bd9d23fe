"""Fixtures for the script-runner tests: the headless desktop, a real rsyslogd, a runner."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.scripts import RunnerConfig, ScriptRunner, SyslogFileSource
from tests.installed import unavailable

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "examples" / "scripts"
LIBRARY = SCRIPTS / "lib" / "invoice_app.json"
FLASH_APP = Path(__file__).resolve().parent / "fixtures" / "flash_app.py"
PYTHON = sys.executable

_RSYSLOG_CONF = """\
global(workDirectory="{dir}")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="{dir}/log.sock" CreatePath="on")
*.* action(type="omfile" file="{dir}/syslog.log" template="RSYSLOG_TraditionalFileFormat")
"""


class Syslog:
    """A private, real rsyslogd: apps log to ``socket``, it writes ``file``."""

    def __init__(self, folder: Path) -> None:
        self.socket = folder / "log.sock"
        self.file = folder / "syslog.log"


@pytest.fixture(scope="session")
def rsyslog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Syslog]:
    """A real rsyslogd (Debian package rsyslog) with its own config, socket and output file;
    no system daemon runs in this container. Missing under LOOPKIT_REQUIRE_DESKTOP, it fails
    the tests that need it (scripts/setup.sh installs it); elsewhere they are skipped."""
    daemon = shutil.which("rsyslogd") or (
        "/usr/sbin/rsyslogd" if Path("/usr/sbin/rsyslogd").exists() else None
    )
    if daemon is None:
        unavailable("rsyslogd is not installed (apt package rsyslog)")
    folder = tmp_path_factory.mktemp("rsyslog")
    conf = folder / "rsyslog.conf"
    conf.write_text(_RSYSLOG_CONF.format(dir=folder))
    proc = subprocess.Popen(
        [daemon, "-n", "-f", str(conf), "-i", str(folder / "rsyslogd.pid")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    syslog = Syslog(folder)
    deadline = time.monotonic() + 10
    while not syslog.socket.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(5)
            unavailable(f"rsyslogd did not start (exit status {proc.returncode}, config {conf})")
        time.sleep(0.02)
    try:
        yield syslog
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


RunnerFactory = Callable[..., ScriptRunner]


@pytest.fixture
def make_runner(
    headless_desktop: HeadlessDesktop,
    rsyslog: Syslog,
    tmp_path: Path,
) -> RunnerFactory:
    """A runner on the test desktop whose apps log errors to the private rsyslogd."""

    def make(out: Path | None = None, **options: object) -> ScriptRunner:
        config = RunnerConfig(
            out_dir=out or tmp_path / "runs",
            env=headless_desktop.env,
            app_env={"INVOICE_APP_SYSLOG": str(rsyslog.socket)},
            **options,  # type: ignore[arg-type]
        )
        return ScriptRunner(config, system_log=SyslogFileSource(rsyslog.file))

    return make
