"""A headless desktop for Linux: Xvfb, a private D-Bus session and the AT-SPI accessibility bus.

Usage as a context manager::

    with HeadlessDesktop() as desktop:
        app = desktop.spawn([sys.executable, "-m", "invoice_app"])
        ...  # any process started with ``env=desktop.env`` sees the desktop

or from the shell (the command runs inside the desktop; its exit status is passed on)::

    python -m loopkit_ui.session -- pytest tests/ui

Every process of the desktop (the X server, both D-Bus daemons, the AT-SPI registry and everything
started with :meth:`HeadlessDesktop.spawn`) lives in one process group, so teardown is a single
``killpg`` plus a sweep of recorded descendants that left the group; nothing is left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["DesktopError", "HeadlessDesktop", "main"]

_AT_SPI_LAUNCHER_CANDIDATES = (
    "/usr/libexec/at-spi-bus-launcher",
    "/usr/lib/at-spi2-core/at-spi-bus-launcher",
    "/usr/lib/at-spi-bus-launcher",
)

_XVFB_FLAGS = ("-nolisten", "tcp", "-noreset")
_GET_A11Y_ADDRESS = (
    "--session",
    "--print-reply=literal",
    "--dest=org.a11y.Bus",
    "--reply-timeout=2000",
    "/org/a11y/bus",
    "org.a11y.Bus.GetAddress",
)


class DesktopError(RuntimeError):
    """The headless desktop could not be started (a missing program, a timeout)."""


def _find_program(name: str, candidates: Sequence[str] = ()) -> str:
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found is None:
        raise DesktopError(
            f"program {name!r} not found; the headless desktop needs the Debian packages "
            "xvfb, dbus and at-spi2-core"
        )
    return found


def _read_line(fd: int, timeout: float, what: str) -> str:
    """Read one line from a pipe within ``timeout`` seconds (the daemons print their address)."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DesktopError(f"timed out after {timeout:.0f} s waiting for {what}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            raise DesktopError(f"{what}: the process closed its pipe without answering")
        data += chunk
    return data.split(b"\n", 1)[0].decode().strip()


def _children_of(pids: set[int]) -> set[int]:
    """All live descendants of ``pids`` (read from /proc), so that daemons which left the
    process group are still found at teardown."""
    parent_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: split after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        parent_of[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = set(pids)
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier} - found
        found |= frontier
    return found


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (Linux, via /proc); a zombie counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # A zombie is dead for our purposes; its parent reaps it.
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


class HeadlessDesktop:
    """Xvfb + a private D-Bus session + the AT-SPI bus, torn down completely on exit.

    Args:
        screen: Xvfb screen geometry ``WIDTHxHEIGHTxDEPTH``.
        accessibility: start the AT-SPI bus launcher (needed to read the UI tree).
        startup_timeout: seconds to wait for each daemon to come up.
    """

    def __init__(
        self,
        *,
        screen: str = "1280x1024x24",
        accessibility: bool = True,
        startup_timeout: float = 15.0,
    ) -> None:
        if not sys.platform.startswith("linux"):
            raise DesktopError("HeadlessDesktop needs Linux (Xvfb and D-Bus)")
        self.screen = screen
        self.accessibility = accessibility
        self.startup_timeout = startup_timeout
        self.display: str | None = None
        self.bus_address: str | None = None
        self.a11y_bus_address: str | None = None
        self.pgid: int | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._daemons: list[subprocess.Popen[bytes]] = []
        self._runtime_dir: str | None = None
        self._env: dict[str, str] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> HeadlessDesktop:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> HeadlessDesktop:
        """Start Xvfb, the D-Bus session and the accessibility bus; returns ``self``."""
        if self._procs:
            raise DesktopError("the desktop is already running")
        try:
            self._runtime_dir = tempfile.mkdtemp(prefix="loopkit-desktop-")
            os.chmod(self._runtime_dir, 0o700)
            self._start_xvfb()
            self._start_dbus()
            if self.accessibility:
                self._start_at_spi()
            self._daemons = list(self._procs)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def env(self) -> dict[str, str]:
        """The environment variables a process needs to live on this desktop."""
        if not self._env:
            raise DesktopError("the desktop is not running; call start() first")
        return dict(self._env)

    def child_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """``os.environ`` merged with :attr:`env` and ``extra``: a child's full environment."""
        merged = dict(os.environ)
        # An inherited offscreen platform would hide the app from AT-SPI.
        merged.pop("QT_QPA_PLATFORM", None)
        merged.update(self.env)
        if extra:
            merged.update(extra)
        return merged

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        in_group: bool = True,
        **kwargs: Any,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` on this desktop; teardown ends it and its descendants.

        ``in_group=True`` puts it in the desktop's process group; ``False`` keeps it in the
        caller's group (a foreground command that reads the terminal needs that).
        """
        if self.pgid is None:
            raise DesktopError("the desktop is not running; call start() first")
        if in_group:
            kwargs["process_group"] = self.pgid
        proc = subprocess.Popen(list(argv), env=self.child_env(env), **kwargs)
        self._procs.append(proc)
        return proc

    def pids(self) -> set[int]:
        """Every live process of the desktop: the group's members and their descendants."""
        own = {proc.pid for proc in self._procs if proc.poll() is None}
        if self.pgid is not None:
            own |= _group_members(self.pgid)
        return {pid for pid in own | _children_of(own) if pid_alive(pid)}

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate every process of the desktop (SIGTERM, then SIGKILL) and remove temp files."""
        victims = self.pids() if self._procs else set()
        # Applications first, while their X server and buses still run (they exit cleanly
        # instead of complaining about a lost display), then the daemons.
        apps = [p for p in self._procs[len(self._daemons) :] if p.poll() is None]
        for proc in apps:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in apps:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(min(2.0, timeout))
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGTERM)
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        while time.monotonic() < deadline and any(pid_alive(pid) for pid in victims):
            time.sleep(0.02)
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
        for pid in victims:
            if pid_alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)
        self._procs.clear()
        self._daemons.clear()
        self.pgid = None
        self._env = {}
        if self._runtime_dir:
            shutil.rmtree(self._runtime_dir, ignore_errors=True)
            self._runtime_dir = None

    # -- the daemons -------------------------------------------------------------------------

    def _start_xvfb(self) -> None:
        xvfb = _find_program("Xvfb")
        read_fd, write_fd = os.pipe()
        try:
            # -displayfd: Xvfb picks a free display number itself and writes it to the pipe,
            # so parallel desktops never race for the same number.
            proc = subprocess.Popen(
                [xvfb, "-displayfd", str(write_fd), "-screen", "0", self.screen, *_XVFB_FLAGS],
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # A new process group inside our session: the other daemons can join it
                # (setpgid refuses a group of another session).
                process_group=0,
            )
            self._procs.append(proc)
            self.pgid = proc.pid
            os.close(write_fd)
            write_fd = -1
            number = _read_line(read_fd, self.startup_timeout, "Xvfb's display number")
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self.display = f":{number}"
        self._env = {
            "DISPLAY": self.display,
            "XDG_RUNTIME_DIR": self._runtime_dir or "",
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            "NO_AT_BRIDGE": "0",
            "GTK_A11Y": "atspi",
        }

    def _start_dbus(self) -> None:
        dbus = _find_program("dbus-daemon")
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                [dbus, "--session", "--nofork", "--nosyslog", f"--print-address={write_fd}"],
                pass_fds=(write_fd,),
                env=self.child_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                process_group=self.pgid,
            )
            self._procs.append(proc)
            os.close(write_fd)
            write_fd = -1
            self.bus_address = _read_line(read_fd, self.startup_timeout, "the D-Bus address")
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self._env["DBUS_SESSION_BUS_ADDRESS"] = self.bus_address

    def _start_at_spi(self) -> None:
        launcher = _find_program("at-spi-bus-launcher", _AT_SPI_LAUNCHER_CANDIDATES)
        proc = subprocess.Popen(
            [launcher, "--launch-immediately"],
            env=self.child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            process_group=self.pgid,
        )
        self._procs.append(proc)
        # Ask the launcher for the accessibility bus address; once it answers, the bus is up.
        # Exporting it as AT_SPI_BUS_ADDRESS spares every client (Qt, Atspi) that round trip.
        deadline = time.monotonic() + self.startup_timeout
        dbus_send = _find_program("dbus-send")
        while True:
            if proc.poll() is not None:
                raise DesktopError(f"at-spi-bus-launcher exited with status {proc.returncode}")
            result = subprocess.run(
                [dbus_send, *_GET_A11Y_ADDRESS],
                env=self.child_env(),
                capture_output=True,
                text=True,
                check=False,
            )
            address = result.stdout.strip()
            if result.returncode == 0 and address:
                break
            if time.monotonic() > deadline:
                raise DesktopError(
                    f"timed out after {self.startup_timeout:.0f} s waiting for the AT-SPI bus: "
                    f"{result.stderr.strip()}"
                )
            time.sleep(0.05)
        self.a11y_bus_address = address
        self._env["AT_SPI_BUS_ADDRESS"] = address


def _group_members(pgid: int) -> set[int]:
    members = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if os.getpgid(int(entry)) == pgid:
                    members.add(int(entry))
    return members


def _become_subreaper() -> None:
    """Adopt orphaned descendants (PR_SET_CHILD_SUBREAPER), so none escapes the sweep."""
    import ctypes

    pr_set_child_subreaper = 36
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m loopkit_ui.session [--screen WxHxD] -- COMMAND...``: run COMMAND on a headless
    desktop and pass on its exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m loopkit_ui.session",
        description="Run a command on a private headless desktop (Xvfb + D-Bus + AT-SPI).",
    )
    parser.add_argument("--screen", default="1280x1024x24", help="Xvfb screen, WxHxDEPTH")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("missing COMMAND: use python -m loopkit_ui.session -- COMMAND [ARGS...]")
    _become_subreaper()
    with HeadlessDesktop(screen=args.screen) as desktop:
        # The command stays in our (foreground) process group so it can read the terminal;
        # as a subreaper we adopt whatever it orphans, and teardown sweeps our descendants.
        proc = desktop.spawn(command, in_group=False)

        def forward(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, forward)
        status = proc.wait()
        # Orphans the command left behind were adopted by us (subreaper): end them too.
        for pid in _children_of({os.getpid()}) - {p.pid for p in desktop._procs}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
