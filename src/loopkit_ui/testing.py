"""Pytest helpers for UI tests: a headless desktop fixture and an app launcher.

Use as a plugin (``pytest_plugins = ["loopkit_ui.testing"]``) or import the fixtures. The
desktop never touches ``os.environ``: pass :attr:`HeadlessDesktop.env` (or ``child_env()``) to
the processes that should live on it, and ``bus_address``/``display`` to an in-process backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import pytest

from loopkit_ui.headless_desktop import DesktopError, HeadlessDesktop

__all__ = ["ToolAnswer", "UIServerClient", "desktop_available", "headless_desktop", "running_app"]


def desktop_available() -> str | None:
    """None when a headless desktop can start here, else the reason it cannot."""
    if not sys.platform.startswith("linux"):
        return "the headless desktop needs Linux"
    for program in ("Xvfb", "dbus-daemon", "dbus-send"):
        if shutil.which(program) is None:
            return f"{program} is not installed (apt: xvfb dbus at-spi2-core)"
    return None


@pytest.fixture(scope="session")
def headless_desktop() -> Iterator[HeadlessDesktop]:
    """One private desktop (Xvfb + D-Bus + AT-SPI) for the test session; skipped off Linux."""
    # Where the desktop must exist (the project's test command sets LOOPKIT_REQUIRE_DESKTOP),
    # a missing one fails the tests instead of skipping them silently.
    give_up = pytest.fail if os.environ.get("LOOPKIT_REQUIRE_DESKTOP") else pytest.skip
    reason = desktop_available()
    if reason:
        give_up(reason)
    try:
        desktop = HeadlessDesktop().start()
    except DesktopError as error:
        give_up(f"headless desktop unavailable: {error}")
    try:
        yield desktop
    finally:
        desktop.stop()


@contextlib.contextmanager
def running_app(
    desktop: HeadlessDesktop,
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 5.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start an app on the desktop and stop it (SIGTERM, then SIGKILL) afterwards."""
    proc = desktop.spawn(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        if proc.stderr is not None:
            proc.stderr.close()


class ToolAnswer:
    """One tool answer: ``error`` flag, raw ``text``, ``data`` (parsed JSON or None), the
    round-trip time ``ms`` measured at the client, the ``structured`` content (None when the
    answer has none) and the URIs of its resource ``links``."""

    def __init__(
        self,
        error: bool,
        text: str,
        ms: float,
        structured: Any = None,
        links: Sequence[str] = (),
    ) -> None:
        self.error = error
        self.text = text
        self.ms = ms
        self.structured = structured
        self.links = list(links)
        try:
            self.data: Any = json.loads(text)
        except ValueError:
            self.data = None

    def __getitem__(self, key: str) -> Any:
        if not isinstance(self.data, dict):
            raise KeyError(f"answer is not a JSON object: {self.text[:200]}")
        return self.data[key]

    def __repr__(self) -> str:
        return f"ToolAnswer(error={self.error}, ms={self.ms:.1f}, text={self.text[:300]!r})"


class UIServerClient:
    """A synchronous MCP client for the UI server over stdio (the ``mcp`` SDK's ``Client`` on
    an event loop in a background thread), so tests and benchmarks can be plain functions."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        command: str = sys.executable,
        timeout: float = 60.0,
    ) -> None:
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        ready: Future[None] = Future()
        self._runner = asyncio.run_coroutine_threadsafe(
            self._own(command, list(args), dict(env) if env else None, ready), self._loop
        )
        ready.result(timeout)

    async def _own(
        self, command: str, args: list[str], env: dict[str, str] | None, ready: Future[None]
    ) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        self._stop = asyncio.Event()
        try:
            params = StdioServerParameters(command=command, args=args, env=env)
            async with Client(params) as client:
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error)
            raise

    def tools(self) -> list[Any]:
        """The server's tools (``mcp_types.Tool``)."""
        future = asyncio.run_coroutine_threadsafe(self._client.list_tools(), self._loop)
        return list(future.result(self.timeout).tools)

    def call(self, name: str, **arguments: Any) -> ToolAnswer:
        """Call a tool; returns its answer (errors are answers with ``error=True``)."""
        args = {k: v for k, v in arguments.items() if v is not None}
        start = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(self._client.call_tool(name, args), self._loop)
        result = future.result(self.timeout)
        ms = (time.perf_counter() - start) * 1000
        text = "".join(getattr(block, "text", "") for block in result.content)
        links = [str(b.uri) for b in result.content if getattr(b, "type", "") == "resource_link"]
        return ToolAnswer(bool(result.is_error), text, ms, result.structured_content, links)

    def read_resource(self, uri: str) -> Any:
        """``resources/read``: the contents (``mcp_types`` text or blob resource contents)."""
        future = asyncio.run_coroutine_threadsafe(self._client.read_resource(uri), self._loop)
        return list(future.result(self.timeout).contents)

    def server_info(self) -> Any:
        """The server's ``serverInfo`` from the handshake (name, version)."""
        return self._client.server_info

    def close(self) -> None:
        """Close the session (the server process exits) and stop the loop thread."""
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        with contextlib.suppress(Exception):
            self._runner.result(self.timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout)
        self._loop.close()

    def __enter__(self) -> UIServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
