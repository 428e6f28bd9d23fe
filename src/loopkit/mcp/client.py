"""A connection to one MCP server, over stdio (a child process) or streamable HTTP.

The ``mcp`` SDK (2.x, ``mcp.Client``) does the protocol; this module adds what an agent loop
needs around it: a bad command or unreachable URL fails fast with an error naming it, a server
that dies or hangs raises :class:`~loopkit.errors.MCPServerError` within the call timeout
(never a hang), the child's stderr is captured and its last lines quoted in errors instead of
spamming the console, and closing always stops and reaps the child.

``mcp`` is imported inside functions only: ``import mcp`` costs most of a second, and
``import loopkit`` must stay fast.

The SDK's client lives in a task of its own (the "owner task"): anyio cancel scopes must be
entered and left in one task, and an owner task lets a connection be opened in one task and
closed in another (a pytest fixture, a runner that opens servers up front) without tripping that.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import shlex
import tempfile
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast
from urllib.parse import urlsplit

from loopkit.abstractions.tools import ToolError
from loopkit.child_env import check_passthrough
from loopkit.errors import MCPServerError
from loopkit.mcp.stdio_process import (
    ServerProcess,
    process_transport,
    sdk_default_environment,
    spawn_stdio_server,
)
from loopkit.mcp.targets import (
    HttpTarget,
    StdioTarget,
    command_problem,
    redacted_url,
    server_env,
)
from loopkit.mcp.tools import MCPTool

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, Implementation

    from loopkit.mcp.waiting_server import WaitingPythonServer

_log = logging.getLogger("loopkit.mcp")

DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds a server gets to start and finish the MCP handshake."""
DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a tool call (or a tools/list) gets before the server counts as hung."""

# Extra seconds on top of the SDK's own request timeout before our outer guard fires: the SDK
# answers first with a precise error; the guard exists only so that nothing can ever hang.
_TIMEOUT_SLACK = 2.0
# Seconds for a graceful close (stdin closed, server exits) before the owner task is cancelled;
# the SDK's stdio shutdown then escalates to SIGTERM / SIGKILL of the process group by itself.
_CLOSE_GRACE = 5.0
_CLOSE_HARD = 8.0
_STDERR_TAIL_LINES = 20
_STDERR_TAIL_CHARS = 2000
_MAX_TOOL_PAGES = 100

_T = TypeVar("_T")


class _StderrCapture:
    """The child's stderr, written to an anonymous temporary file so it never blocks or spams."""

    def __init__(self) -> None:
        self.file = cast(
            TextIO,
            tempfile.TemporaryFile(  # noqa: SIM115 (lives as long as the client)
                mode="w+", encoding="utf-8", errors="replace"
            ),
        )

    def tail(self, max_lines: int = _STDERR_TAIL_LINES, max_chars: int = _STDERR_TAIL_CHARS) -> str:
        """The last lines written so far (the child writes through its own descriptor)."""
        if self.file.closed:
            return ""
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - 16 * max_chars)
        # pread: the child shares the file offset, so a seek + read here would race its writes.
        data = os.pread(fd, size - start, start).decode("utf-8", errors="replace")
        lines = [line for line in data.splitlines() if line.strip()][-max_lines:]
        return "\n".join(lines)[-max_chars:]

    def close(self) -> None:
        self.file.close()


def _leaf_exception(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class MCPClient:
    """One connection to one MCP server; an async context manager.

    Build it with :meth:`stdio` (the server is a child process speaking MCP on stdin/stdout) or
    :meth:`http` (a streamable-HTTP endpoint), then::

        async with MCPClient.stdio("python", args=["server.py"]) as server:
            tools = await server.list_tools()      # list[MCPTool], each a loopkit Tool
            text = await tools[0].invoke({"x": 1})  # plain text

    Every request is bounded by ``call_timeout``; the handshake by ``startup_timeout``. A server
    that cannot be started, dies, or does not answer in time raises
    :class:`~loopkit.errors.MCPServerError` (with the last lines of its stderr for stdio). A tool
    error (``isError``) raises :class:`~loopkit.abstractions.ToolError` from
    :meth:`MCPTool.invoke`. Closing stops the child and reaps it, also after errors and
    cancellation.
    """

    def __init__(
        self,
        target: StdioTarget | HttpTarget,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        tool_prefix: str = "",
        name: str | None = None,
        prestarted: WaitingPythonServer | None = None,
    ) -> None:
        for label, value in (("startup_timeout", startup_timeout), ("call_timeout", call_timeout)):
            if not value > 0:
                raise ValueError(f"{label} must be a positive number of seconds, got {value!r}")
        self._target = target
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self.tool_prefix = tool_prefix
        if isinstance(target, StdioTarget):
            default_label = shlex.join([target.command, *target.args])
            if len(default_label) > 200:
                default_label = default_label[:197] + "..."
        else:
            default_label = redacted_url(target.url)
        self.label = name or default_label
        self._stderr: _StderrCapture | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._closing: asyncio.Event | None = None
        self._lost: str | None = None  # why the connection is gone, once it is
        self._closed = False
        self._prestarted = prestarted

    # ----------------------------------------------------------------------------- factories

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        env_passthrough: Sequence[str] = (),
        cwd: str | os.PathLike[str] | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        tool_prefix: str = "",
        name: str | None = None,
        prestarted: WaitingPythonServer | None = None,
    ) -> MCPClient:
        """A server run as a child process speaking MCP over stdin/stdout.

        The child gets the SDK's safe environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``,
        ``TERM``, ``USER``) plus ``env``. ``inherit_env=True`` passes loopkit's allowlist of this
        process's environment instead (:func:`loopkit.child_env.child_environment`: also the
        locale, ``DISPLAY``, ``XDG_*``, the D-Bus and AT-SPI addresses, ``QT_*``, ``PYTHONPATH``,
        ``LOOPKIT_*``, ...), which a UI server needs; never an API key or another secret-looking
        variable. ``env_passthrough`` adds variables by name or glob pattern (a secret-looking
        one only by its exact name). ``name`` replaces the command line in messages.
        ``prestarted``: a :class:`~loopkit.mcp.waiting_server.WaitingPythonServer` started
        earlier, used instead of spawning when it runs this command (see its module).
        """
        if isinstance(args, str):
            raise TypeError(f"args must be a list of strings, not the string {args!r}")
        if isinstance(env_passthrough, str):
            raise TypeError(
                f"env_passthrough must be a list of names, not the string {env_passthrough!r}"
            )
        target = StdioTarget(
            command=os.fspath(command),
            args=tuple(str(a) for a in args),
            env=dict(env) if env is not None else None,
            inherit_env=inherit_env,
            cwd=os.fspath(cwd) if cwd is not None else None,
            env_passthrough=tuple(check_passthrough(env_passthrough)),
        )
        return cls(
            target,
            startup_timeout=startup_timeout,
            call_timeout=call_timeout,
            tool_prefix=tool_prefix,
            name=name,
            prestarted=prestarted,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        tool_prefix: str = "",
        name: str | None = None,
    ) -> MCPClient:
        """A server at a streamable-HTTP endpoint (``http(s)://host:port/mcp``).

        ``headers`` go with every request (an ``Authorization`` token, say); they never appear
        in messages or logs, and neither do the URL's userinfo and query string.
        """
        scheme = urlsplit(url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(
                f"MCP server URL must start with http:// or https://, got {redacted_url(url)!r}"
            )
        return cls(
            HttpTarget(url=url, headers=dict(headers or {})),
            startup_timeout=startup_timeout,
            call_timeout=call_timeout,
            tool_prefix=tool_prefix,
            name=name,
        )

    # ------------------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> MCPClient:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def is_connected(self) -> bool:
        """True between a successful :meth:`connect` and :meth:`aclose`, while the server lives."""
        return self._client is not None and self._lost is None and not self._closed

    async def connect(self) -> None:
        """Start (or reach) the server and finish the MCP handshake within ``startup_timeout``."""
        if self._task is not None or self._closed:
            raise RuntimeError(
                f"MCPClient for {self.label} was already connected; make a new one to reconnect"
            )
        if isinstance(self._target, StdioTarget):
            problem = command_problem(self._target)
            if problem:
                self._closed = True
                raise MCPServerError(f"cannot start MCP server `{self.label}`: {problem}")
            self._stderr = _StderrCapture()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._own_session(ready), name=f"mcp-client {self.label}")
        try:
            async with asyncio.timeout(self.startup_timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self._stop()
            raise MCPServerError(
                self._describe(
                    f"did not finish starting (the MCP handshake) within {self.startup_timeout:g} s"
                )
            ) from None
        except BaseException:
            await asyncio.shield(self._stop())
            raise

    async def aclose(self) -> None:
        """Close the session and stop the server; the child is reaped. Safe to call twice."""
        await self._stop()

    async def _stop(self) -> None:
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            if self._client is not None and self._closing is not None:
                self._closing.set()  # graceful: leave the SDK client's context normally
            else:
                task.cancel()  # still in the handshake
            done, _ = await asyncio.wait({task}, timeout=_CLOSE_GRACE)
            if not done:
                task.cancel()
                done, _ = await asyncio.wait({task}, timeout=_CLOSE_HARD)
            if not done:
                _log.warning("MCP server %s did not shut down; abandoning it", self.label)
                return
        if self._stderr is not None:
            self._stderr.close()

    async def _own_session(self, ready: asyncio.Future[None]) -> None:
        """The owner task: enter the SDK client, signal ``ready``, wait for close, leave."""
        try:
            if isinstance(self._target, StdioTarget) and os.name == "posix":
                # The server starts first and the SDK is imported meanwhile (each takes most of
                # a second): see loopkit.mcp.stdio_process.
                process = await self._spawn(self._target)
                async with process_transport(process) as streams:
                    await self._session(_opened(streams), ready)
            else:
                await asyncio.to_thread(importlib.import_module, "mcp")  # the loop runs on
                await self._session(self._make_transport(), ready)
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:  # reported through `ready` or the log, never lost
            if not ready.done():
                ready.set_exception(self._startup_error(exc))
            elif not self._closed:
                self._lost = f"the connection failed: {_leaf_exception(exc)!r}"
                _log.warning("MCP server %s: %s", self.label, self._lost)
            else:
                _log.debug("MCP server %s: error while closing: %r", self.label, exc)
        finally:
            self._client = None

    async def _session(
        self, transport: AbstractAsyncContextManager[Any], ready: asyncio.Future[None]
    ) -> None:
        """Enter the SDK client over ``transport``, signal ``ready``, wait for close."""
        from mcp import Client

        async with Client(
            transport, read_timeout_seconds=self.call_timeout, client_info=_client_info()
        ) as client:
            self._client = client
            ready.set_result(None)
            assert self._closing is not None
            await self._closing.wait()

    async def _spawn(self, target: StdioTarget) -> ServerProcess:
        """Start the stdio server as the SDK would (its default environment under ours), or
        hand the command to the waiting server given for it."""
        assert self._stderr is not None
        env = sdk_default_environment() | (server_env(target) or {})
        waiting = self._prestarted
        if waiting is not None and waiting.matches(target) and waiting.fits(env):
            args = list(target.args[len(waiting.entry) :])
            return await waiting.adopt(args, env, self._stderr.file)
        return await spawn_stdio_server(
            target.command, list(target.args), env=env, cwd=target.cwd, errlog=self._stderr.file
        )

    def _make_transport(self) -> AbstractAsyncContextManager[Any]:
        if isinstance(self._target, StdioTarget):  # Windows: the SDK's own (a Job Object)
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=self._target.command,
                args=list(self._target.args),
                env=server_env(self._target),  # the SDK adds its own safe variables to these
                cwd=self._target.cwd,
            )
            assert self._stderr is not None
            return stdio_client(params, errlog=self._stderr.file)
        return _http_transport(self._target, connect_timeout=min(self.startup_timeout, 30.0))

    def _startup_error(self, exc: BaseException) -> MCPServerError:
        leaf = _leaf_exception(exc)
        if isinstance(leaf, MCPServerError):
            return leaf
        if isinstance(leaf, OSError) and isinstance(self._target, StdioTarget):
            reason = leaf.strerror or str(leaf)
            return MCPServerError(f"cannot start MCP server `{self.label}`: {reason}")
        if _mcp_error_code(leaf) == _CONNECTION_CLOSED:
            what = (
                "exited or closed its output during the MCP handshake (is it an MCP server?)"
                if isinstance(self._target, StdioTarget)
                else "closed the connection during the MCP handshake"
            )
            return MCPServerError(self._describe(what))
        return MCPServerError(
            self._describe(f"failed during the MCP handshake: {type(leaf).__name__}: {leaf}")
        )

    def _describe(self, what: str) -> str:
        """``MCP server <label> <what>``, plus the last lines of the server's stderr, if any."""
        message = f"MCP server `{self.label}` {what}"
        tail = self._stderr.tail() if self._stderr is not None else ""
        if tail:
            message += f"\n--- last lines of its stderr ---\n{tail}"
        return message

    def stderr_tail(self, max_lines: int = _STDERR_TAIL_LINES) -> str:
        """The last lines the (stdio) server wrote to stderr so far; empty for HTTP."""
        return self._stderr.tail(max_lines) if self._stderr is not None else ""

    # ------------------------------------------------------------------------------- requests

    def _require_client(self) -> Client:
        if self._lost is not None:
            raise MCPServerError(self._describe(f"is no longer connected: {self._lost}"))
        if self._client is None or self._closed:
            state = "is closed" if self._closed else "is not connected (use `async with`)"
            raise MCPServerError(f"MCP server `{self.label}` {state}")
        return self._client

    async def _request(self, what: str, call: Awaitable[_T], limit: float) -> _T:
        """Await one SDK request, turning every way it can fail into a clear loopkit error."""
        from mcp import MCPError

        try:
            async with asyncio.timeout(limit + _TIMEOUT_SLACK):
                return await call
        except TimeoutError:
            raise MCPServerError(
                self._describe(f"did not answer {what} within {limit:g} s (it may be hung)")
            ) from None
        except MCPError as e:
            if e.code == _REQUEST_TIMEOUT:
                raise MCPServerError(
                    self._describe(f"did not answer {what} within {limit:g} s (it may be hung)")
                ) from None
            if e.code == _CONNECTION_CLOSED and self._closed:
                raise MCPServerError(
                    f"MCP server `{self.label}` was closed while {what} was running"
                ) from None
            if e.code == _CONNECTION_CLOSED:
                what_happened = f"closed the connection during {what}"
                if e.error.message and e.error.message != "Connection closed":
                    what_happened += f" ({e.error.message})"
                if isinstance(self._target, StdioTarget):
                    # stdout hit EOF: the child is gone for good. Over HTTP only this
                    # request's stream broke; the next request finds out for itself.
                    self._lost = f"it closed the connection during {what}"
                raise MCPServerError(self._describe(what_happened)) from None
            # A JSON-RPC error answer (bad params, unknown method): the server is fine and the
            # model can act on the message.
            raise ToolError(
                f"the MCP server refused {what}: {e.error.message} (code {e.code})"
            ) from e
        except (ToolError, MCPServerError):
            raise
        except Exception as e:  # transport failures (HTTP errors, broken pipes, bad JSON)
            leaf = _leaf_exception(e)
            raise MCPServerError(
                self._describe(f"failed during {what}: {type(leaf).__name__}: {leaf}")
            ) from e

    async def list_tools(self, *, prefix: str | None = None) -> list[MCPTool]:
        """The server's tools as loopkit tools (all pages), named ``prefix + server name``.

        ``prefix`` defaults to the connection's ``tool_prefix``.
        """
        client = self._require_client()
        effective_prefix = self.tool_prefix if prefix is None else prefix
        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await self._request(
                "tools/list", client.list_tools(cursor=cursor), self.call_timeout
            )
            tools.extend(
                MCPTool(
                    self,
                    server_tool_name=t.name,
                    description=t.description,
                    parameters=t.input_schema,
                    prefix=effective_prefix,
                    title=t.title,
                )
                for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        call_timeout: float | None = None,
    ) -> CallToolResult:
        """Call a tool by its server-side name and return the SDK's raw ``CallToolResult``.

        ``call_timeout`` overrides the connection's for this call. Most callers want
        :meth:`MCPTool.invoke`, which returns plain text and raises on ``isError``.
        """
        client = self._require_client()
        limit = self.call_timeout if call_timeout is None else call_timeout
        return await self._request(
            f"tool {name!r}",
            client.call_tool(name, dict(arguments or {}), read_timeout_seconds=limit),
            limit,
        )

    @property
    def server_name(self) -> str | None:
        """The name the server gave in its handshake, if it gave one."""
        info = self._client.server_info if self._client is not None else None
        return info.name if info is not None else None

    @property
    def instructions(self) -> str | None:
        """The server's instructions text from its handshake, if any."""
        return self._client.instructions if self._client is not None else None

    def __repr__(self) -> str:
        state = "connected" if self.is_connected else "closed" if self._closed else "new"
        return f"MCPClient({self.label!r}, {state})"


# JSON-RPC error codes the SDK uses for its own failures (mcp_types.jsonrpc); copied so that
# reading them does not import the SDK.
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


def _mcp_error_code(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) and type(exc).__name__ == "MCPError" else None


def _client_info() -> Implementation:
    from importlib.metadata import PackageNotFoundError, version

    from mcp_types import Implementation

    try:
        v = version("loopkit")
    except PackageNotFoundError:  # running from a source tree
        v = "0"
    return Implementation(name="loopkit", version=v)


@asynccontextmanager
async def _opened(streams: Any) -> AsyncIterator[Any]:
    """A transport whose streams are already open (their owner closes them)."""
    yield streams


@asynccontextmanager
async def _http_transport(target: HttpTarget, *, connect_timeout: float) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP transport over an httpx client that carries our headers."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # Read timeout as the SDK's default client: a server may hold an SSE stream open; each
    # request is bounded by our call timeout instead.
    timeout = httpx2.Timeout(30.0, connect=connect_timeout, read=300.0)
    async with (
        httpx2.AsyncClient(headers=target.headers, timeout=timeout) as http,
        streamable_http_client(target.url, http_client=http) as streams,
    ):
        yield streams
