"""A headless desktop for Linux: Xvfb, a private D-Bus session and the AT-SPI accessibility bus.

Usage as a context manager::

    with HeadlessDesktop() as desktop:
        app = desktop.spawn([sys.executable, "-m", "invoice_app"])
        ...  # any process started with ``env=desktop.env`` sees the desktop

or from the shell (the command runs inside the desktop; its exit status is passed on)::

    python -m loopkit_ui.session -- pytest tests/ui

Every process of the desktop (the X server, both D-Bus daemons, the AT-SPI registry and everything
started with :meth:`HeadlessDesktop.spawn`) lives in one process group and carries the desktop's
marker variable, so teardown is a ``killpg`` plus a sweep of recorded descendants and marked
processes that left the group; nothing is left behind. The desktop also dies with its owner when
the owner is SIGKILLed: a guard process (:mod:`loopkit_ui.desktop_guard`) reads a pipe only the
owner holds and ends the desktop at end-of-file, and each daemon gets ``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from loopkit.child_env import child_environment
from loopkit.parent_death import parent_death_preexec
from loopkit_ui import desktop_guard

__all__ = ["DesktopError", "HeadlessDesktop", "pid_alive", "screen_problem"]

#: Prefix of the marker variable every process of a desktop carries (``LOOPKIT_DESKTOP_<id>=1``).
MARKER_PREFIX = "LOOPKIT_DESKTOP_"
_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
#: Seconds the guard waits between SIGTERM and SIGKILL when the owner died.
_GUARD_GRACE_S = 3.0

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
    parent_of = {pid: int(fields[1]) for pid, fields in desktop_guard.proc_table().items()}
    found: set[int] = set()
    frontier = set(pids)
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier} - found
        found |= frontier
    return found


def _signal_same(processes: dict[int, str], signum: int) -> None:
    """Send ``signum`` to each pid that still has the start time recorded for it (never to a
    process that reused the number meanwhile)."""
    for pid, started in processes.items():
        if desktop_guard.start_time(pid) == started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (Linux, via /proc); a zombie counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # A zombie is dead for our purposes; its parent reaps it.
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def _pdeathsig(sig: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to send ``sig`` to the child when its parent dies; only
    from the main thread (a worker thread ending would kill a healthy desktop): the guard process
    covers the other cases."""
    return parent_death_preexec(sig)


class HeadlessDesktop:
    """Xvfb + a private D-Bus session + the AT-SPI bus, torn down completely on exit.

    The desktop dies with its owner even when the owner is SIGKILLed (see the module docstring).

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
        problem = screen_problem(screen)
        if problem:
            raise DesktopError(problem)
        self.screen = screen
        self.accessibility = accessibility
        self.startup_timeout = startup_timeout
        self.display: str | None = None
        self.bus_address: str | None = None
        self.a11y_bus_address: str | None = None
        self.pgid: int | None = None
        #: The environment variable (``NAME=1``) every process of this desktop carries.
        self.marker = f"{MARKER_PREFIX}{secrets.token_hex(6).upper()}"
        self._procs: list[subprocess.Popen[bytes]] = []
        # Each started process's kernel start time, read when it was started: a pid whose start
        # time differs later is another process that reused the number (pids wrap around at
        # 32768 here, within minutes when several test suites run).
        self._started: dict[int, str] = {}
        self._daemons: list[subprocess.Popen[bytes]] = []
        self._guard: subprocess.Popen[bytes] | None = None
        self._guard_fd: int | None = None
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
        """Start Xvfb, the D-Bus session and the accessibility bus; returns ``self``.

        Whatever stops the start-up (a daemon that fails, a KeyboardInterrupt) tears down what
        had started before the exception propagates.
        """
        if self._procs or self._guard is not None:
            raise DesktopError("the desktop is already running")
        try:
            self._start_guard()
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
        self._record(proc)
        return proc

    def pids(self) -> set[int]:
        """Every live process of the desktop: the group's members, the processes carrying its
        marker variable, and their descendants."""
        return set(self._processes())

    def _processes(self) -> dict[int, str]:
        """:meth:`pids` with each one's start time (to signal it only while it is the same)."""
        groups = {self.pgid} if self.pgid is not None else set()
        exclude = {os.getpid()} | ({self._guard.pid} if self._guard else set())
        return desktop_guard.desktop_processes(self.marker, groups, dict(self._started), exclude)

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate every process of the desktop (SIGTERM, then SIGKILL) and remove temp files."""
        victims = self._processes()
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
        _signal_same(victims, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        while time.monotonic() < deadline and any(
            pid_alive(pid) and desktop_guard.start_time(pid) == started
            for pid, started in victims.items()
        ):
            time.sleep(0.02)
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
        _signal_same({**victims, **self._processes()}, signal.SIGKILL)
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)
        self._procs.clear()
        self._started.clear()
        self._daemons.clear()
        self.pgid = None
        self._env = {}
        if self._runtime_dir:
            shutil.rmtree(self._runtime_dir, ignore_errors=True)
            self._runtime_dir = None
        self._stop_guard()

    # -- the guard ---------------------------------------------------------------------------

    def _start_guard(self) -> None:
        read_fd, write_fd = os.pipe()  # both ends close-on-exec: no daemon inherits them
        # The guard must not carry any desktop's marker: no sweep may end it before its work.
        # Nor a key or the database URL: the allowlisted environment (loopkit.child_env).
        env = {k: v for k, v in child_environment().items() if not k.startswith(MARKER_PREFIX)}
        guard_file = desktop_guard.__file__
        try:
            self._guard = subprocess.Popen(
                [sys.executable, "-I", "-S", guard_file, self.marker, str(_GUARD_GRACE_S)],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        self._guard_fd = write_fd

    def _tell_guard(self, line: str) -> None:
        if self._guard_fd is not None:
            with contextlib.suppress(OSError):  # a dead guard: the owner's own teardown still runs
                os.write(self._guard_fd, line.encode() + b"\n")

    def _record(self, proc: subprocess.Popen[bytes]) -> None:
        self._procs.append(proc)
        started = desktop_guard.start_time(proc.pid)
        if started is not None:
            self._started[proc.pid] = started
            self._tell_guard(f"p {proc.pid} {started}")

    def _stop_guard(self) -> None:
        """Tell the guard the desktop is down (it exits without touching anything) and reap it."""
        self._tell_guard("done")
        if self._guard_fd is not None:
            os.close(self._guard_fd)
            self._guard_fd = None
        if self._guard is not None:
            try:
                self._guard.wait(5.0)
            except subprocess.TimeoutExpired:
                self._guard.kill()
                self._guard.wait(5.0)
            self._guard = None

    # -- the daemons -------------------------------------------------------------------------

    def _daemon_env(self) -> dict[str, str]:
        # PATH, the display and the buses are all a daemon needs: the allowlist, with the
        # desktop's own variables; never a key or the database URL (loopkit.child_env).
        env = child_environment(extra=self._env or None)
        env[self.marker] = "1"
        return env

    def _start_daemon(
        self, argv: list[str], *, new_group: bool = False, **kwargs: Any
    ) -> subprocess.Popen[bytes]:
        """Start one daemon: in the desktop's process group (``new_group``: its own, which becomes
        the desktop's), with the marker and PR_SET_PDEATHSIG, recorded for teardown and the guard.

        SIGINT, SIGTERM and SIGHUP are held meanwhile: a Python handler run inside the fork's
        hooks would have its KeyboardInterrupt swallowed; held, it is raised right after, with
        the daemon already recorded.
        """
        preexec = _pdeathsig(signal.SIGTERM)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS) if preexec else None
        try:
            if preexec is not None and held is not None:
                set_deathsig, mask = preexec, held

                def preexec() -> None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # the daemon's own mask
                    set_deathsig()

            proc = subprocess.Popen(
                argv,
                env=self._daemon_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # A new process group inside our session: the other daemons can join it
                # (setpgid refuses a group of another session).
                process_group=0 if new_group else self.pgid,
                preexec_fn=preexec,
                **kwargs,
            )
            if new_group:
                self.pgid = proc.pid
                self._tell_guard(f"g {proc.pid}")
            self._record(proc)
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return proc

    def _start_xvfb(self) -> None:
        xvfb = _find_program("Xvfb")
        read_fd, write_fd = os.pipe()
        try:
            # -displayfd: Xvfb picks a free display number itself and writes it to the pipe,
            # so parallel desktops never race for the same number.
            self._start_daemon(
                [xvfb, "-displayfd", str(write_fd), "-screen", "0", self.screen, *_XVFB_FLAGS],
                new_group=True,
                pass_fds=(write_fd,),
            )
            # Forget it before closing: a signal between the two must not make the finally
            # close it again (EBADF instead of the quiet exit 130).
            fd, write_fd = write_fd, -1
            os.close(fd)
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
            self.marker: "1",
        }

    def _start_dbus(self) -> None:
        dbus = _find_program("dbus-daemon")
        read_fd, write_fd = os.pipe()
        try:
            self._start_daemon(
                [dbus, "--session", "--nofork", "--nosyslog", f"--print-address={write_fd}"],
                pass_fds=(write_fd,),
            )
            fd, write_fd = write_fd, -1  # as in _start_xvfb
            os.close(fd)
            self.bus_address = _read_line(read_fd, self.startup_timeout, "the D-Bus address")
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self._env["DBUS_SESSION_BUS_ADDRESS"] = self.bus_address

    def _start_at_spi(self) -> None:
        launcher = _find_program("at-spi-bus-launcher", _AT_SPI_LAUNCHER_CANDIDATES)
        # The launcher starts the accessibility bus (a dbus-daemon) and, through it, the
        # registry: they inherit its group and its marker, which is how teardown finds them.
        proc = self._start_daemon([launcher, "--launch-immediately"])
        # Ask the launcher for the accessibility bus address; once it answers, the bus is up.
        # Exporting it as AT_SPI_BUS_ADDRESS spares every client (Qt, Atspi) that round trip.
        deadline = time.monotonic() + self.startup_timeout
        dbus_send = _find_program("dbus-send")
        while True:
            if proc.poll() is not None:
                raise DesktopError(f"at-spi-bus-launcher exited with status {proc.returncode}")
            result = subprocess.run(
                [dbus_send, *_GET_A11Y_ADDRESS],
                env=self._daemon_env(),
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


_SCREEN = re.compile(r"(\d{1,5})x(\d{1,5})x(\d{1,2})")
_DEPTHS = (8, 15, 16, 24, 30)


def screen_problem(screen: str) -> str | None:
    """None when ``screen`` is a geometry Xvfb accepts, else what is wrong with it."""
    m = _SCREEN.fullmatch(screen)
    expected = (
        "expected WIDTHxHEIGHTxDEPTH like 1280x1024x24 (width and height 1 to 16384, depth "
        f"{', '.join(map(str, _DEPTHS))})"
    )
    if m is None:
        return f"screen {screen!r}: {expected}"
    width, height, depth = (int(g) for g in m.groups())
    if not (1 <= width <= 16384 and 1 <= height <= 16384) or depth not in _DEPTHS:
        return f"screen {screen!r}: {expected}"
    return None
