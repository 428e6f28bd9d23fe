"""A Python stdio MCP server started before its command line and environment are known.

A Python MCP server spends most of its start importing (the MCP SDK alone is most of a second of
CPU). A program that knows early that it will need one (a command that first checks its
settings, then starts the desktop the server must live on) can start it at once with
:meth:`WaitingPythonServer.start`: the process imports the server's modules on another core
while the program goes on, then waits on stdin for one line saying how to run (arguments,
environment, where its stderr goes; the folder is its own, so only a command for that folder
matches). An :class:`~loopkit.mcp.MCPClient` given it
(``prestarted=``) uses it for a matching command (``python -m MODULE ...`` or ``python
SCRIPT ...``, same interpreter, folder and ``PYTHON*`` variables) instead of spawning one; for
any other command it spawns as always. A waiting server is used once.

The server may be handed to a child forked after it started (the client there speaks to it
over the inherited pipes): call :meth:`WaitingPythonServer.forked` in the parent right after the
fork, so the server sees its stdin close when the child closes it.

Linux only (the stderr handover opens ``/proc/PID/fd/N``); elsewhere :meth:`start` returns None.
Run as ``python -m loopkit.mcp.waiting_server [--preload MODULE]... -- ENTRY...`` by
:meth:`start`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from loopkit.parent_death import parent_death_preexec

if TYPE_CHECKING:
    import asyncio

    from loopkit.mcp.targets import StdioTarget

__all__ = ["WaitingPythonServer"]

#: Variables that change how the interpreter starts: an adopted server must have been started
#: with the values the command would have had.
_STARTUP_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONNOUSERSITE")
_MAX_ORDER = 4 * 1024 * 1024


class WaitingPythonServer:
    """A started Python process that will run ``python *entry ARGS`` once told ``ARGS``.

    Build it with :meth:`start`; give it to :meth:`MCPClient.stdio
    <loopkit.mcp.MCPClient.stdio>` (``prestarted=``) or an
    :class:`~loopkit.mcp.MCPServerConfig`'s ``connect(prestarted=...)``; :meth:`close` ends it
    when nothing used it (safe to call always)."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        python: str,
        entry: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
    ) -> None:
        self._process = process
        self.python = python
        self.entry = tuple(entry)
        self._env = dict(env)
        self._cwd = cwd
        self._parent = os.getpid()
        self.used = False

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self._process.pid

    @classmethod
    def start(
        cls,
        entry: Sequence[str],
        *,
        preload: Sequence[str] = (),
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
    ) -> WaitingPythonServer | None:
        """Start ``python`` waiting to run ``entry`` (``["-m", "package.server"]`` or
        ``["server.py"]``), importing the modules ``preload`` meanwhile (what the server
        imports; not the entry module, which then runs as ``__main__``). ``env``: the
        environment it starts with (default: loopkit's allowlist of this one, no secret); the
        command's own environment comes with its arguments. It dies with this process
        (``PR_SET_PDEATHSIG``, from the main thread). None where it cannot be used (not Linux)
        or cannot start."""
        if not sys.platform.startswith("linux") or not entry:
            return None
        if env is None:
            from loopkit.child_env import child_environment

            env = child_environment()
        argv = [python, "-m", __name__]
        for name in preload:
            argv += ["--preload", name]
        argv += ["--", *entry]
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # until told where (the client's capture)
                env=dict(env),
                start_new_session=True,  # as a spawned server: closing ends its whole group
                preexec_fn=parent_death_preexec(signal.SIGTERM),
            )
        except OSError:
            return None
        return cls(process, python, entry, env, os.getcwd())

    def matches(self, target: StdioTarget) -> bool:
        """Whether ``target`` is this server's command (it is then run here, not spawned)."""
        if self.used or not self._alive():
            return False
        n = len(self.entry)
        if target.command != self.python or tuple(target.args[:n]) != self.entry:
            return False
        # ``python -m`` puts the folder first on sys.path: the same one, or another module.
        return target.cwd is None or os.path.realpath(target.cwd) == os.path.realpath(self._cwd)

    def fits(self, env: Mapping[str, str]) -> bool:
        """Whether a server with ``env`` would have started as this one did."""
        return all(env.get(k) == self._env.get(k) for k in _STARTUP_VARIABLES)

    async def adopt(
        self, args: Sequence[str], env: Mapping[str, str], errlog: IO[Any]
    ) -> AdoptedProcess:
        """Tell the server its arguments (after ``entry``), environment and stderr, and return
        it as a process the MCP stdio transport speaks to. Once only."""
        if self.used:
            raise RuntimeError("this waiting server was already used")
        self.used = True
        stderr: str | None = None
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stderr = f"/proc/{os.getpid()}/fd/{errlog.fileno()}"
        order = {"argv": list(args), "env": dict(env), "stderr": stderr}
        process = await AdoptedProcess.over(self._process)
        assert process.stdin is not None
        process.stdin.write(json.dumps(order).encode() + b"\n")
        await process.stdin.drain()
        return process

    def forked(self) -> None:
        """In the parent, right after forking the child that will use the server: close this
        process's ends of its pipes (the child has its own)."""
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _alive(self) -> bool:
        if os.getpid() == self._parent:
            return self._process.poll() is None
        try:  # a forked child cannot wait for its parent's child
            os.kill(self._process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def close(self) -> None:
        """Done with the server. In a forked child: its pipes closed here unless a client here
        uses it (that client stops it). In the process that started it: what is still running
        (never used, or left by a child that died) is killed with its group, and reaped. Safe to
        call twice."""
        if os.getpid() != self._parent:
            if not self.used:
                self.forked()
            return
        self.forked()
        if self.used:  # the client stopped it and reaped it: Popen only learns so here
            self._process.poll()
            return
        if self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()


class AdoptedProcess:
    """A started server as the stdio transport uses a spawned one: ``pid``, ``returncode``
    (-1 when it exited and its status belongs to another process), ``stdin`` and ``stdout``
    streams on the running event loop."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None

    @classmethod
    async def over(cls, process: subprocess.Popen[bytes]) -> AdoptedProcess:
        """Streams over ``process``'s pipes; its exit is watched through a pidfd."""
        import asyncio

        assert process.stdin is not None and process.stdout is not None
        loop = asyncio.get_running_loop()
        adopted = cls(process.pid)
        reader = asyncio.StreamReader(limit=2**16, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), process.stdout)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), process.stdin
        )
        adopted.stdout = reader
        adopted.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        adopted._watch(loop)
        return adopted

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:  # already gone
            self._exited()
            return

        def readable() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            self._exited()

        loop.add_reader(pidfd, readable)

    def _exited(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # another process's child (started before a fork)
            self.returncode = -1
            return
        self.returncode = os.waitstatus_to_exitcode(status) if pid else -1


# -- the waiting process -----------------------------------------------------------------------


def _read_order() -> dict[str, Any] | None:
    """The one line on stdin, read a byte at a time so nothing after it is taken from the
    server's own reader; None when stdin closes first (nobody needs the server)."""
    data = bytearray()
    while len(data) < _MAX_ORDER:
        byte = os.read(0, 1)
        if not byte:
            return None
        if byte == b"\n":
            order = json.loads(data)
            return order if isinstance(order, dict) else None
        data += byte
    return None


def _wait_and_run(argv: list[str]) -> int:
    preload: list[str] = []
    while argv and argv[0] == "--preload":
        preload.append(argv[1])
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    entry = argv
    # Not the entry module itself: run as __main__ later, it would then exist twice.
    for name in preload:  # an error comes again, and is shown, when the server runs
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    order = _read_order()
    if order is None:
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in order.get("env", {}).items()})
    if order.get("stderr"):
        fd = os.open(order["stderr"], os.O_WRONLY | os.O_APPEND)
        os.dup2(fd, 2)
        os.close(fd)
    import runpy

    args = [str(a) for a in order.get("argv", [])]
    if entry[:1] == ["-m"]:
        sys.argv = [entry[1], *args]
        runpy.run_module(entry[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = [entry[0], *args]
        runpy.run_path(entry[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # Stop signals before the order: end quietly (nothing has started).
    for _signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(_signum, lambda *_: os._exit(0))
    sys.exit(_wait_and_run(sys.argv[1:]))
