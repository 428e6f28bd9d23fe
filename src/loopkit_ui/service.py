"""What the MCP server's tools share: the backend, its timeouts, the output folder, and the
conversion of results and errors into compact tool answers.

Every backend call runs in a worker thread under a deadline, so a UI that stops answering (a
modal dialog, a busy thread) produces a timeout error instead of a hung server.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

from loopkit.child_env import child_environment
from loopkit_ui.backends import create_backend
from loopkit_ui.backends.protocol import TreeSnapshot, UIBackend, UIError, UITimeoutError
from loopkit_ui.private_files import create_private_file, make_private_dir

__all__ = ["UIService", "render_tree"]

_T = TypeVar("_T")


def _compact(value: Any) -> Any:
    """Drop None values (fewer tokens); keep empty lists where they carry meaning."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def answer(value: Any, *, error: bool = False) -> CallToolResult:
    """A tool answer: compact JSON text (or plain text), flagged as an error when ``error``."""
    text = value if isinstance(value, str) else json.dumps(_compact(value), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


def render_tree(snapshot: TreeSnapshot) -> str:
    """An indented outline of a snapshot: one node a line, ``role 'name' #id [states]``."""
    state = "cut at the node budget" if snapshot.truncated else "complete"
    lines = [
        f"# {snapshot.app}: {len(snapshot.nodes)} nodes (budget {snapshot.node_budget}, "
        f"{state}), read in {snapshot.ms} ms",
        "# role 'name' #id [states] = text",
    ]
    for node in snapshot.nodes:
        line = "  " * node.depth + node.label()
        if node.states:
            line += f" [{', '.join(node.states)}]"
        if node.text is not None and node.text != node.name:
            line += f" = {node.text!r}"
        lines.append(line)
    return "\n".join(lines) + "\n"


class UIService:
    """The backend plus everything the tools need around it."""

    def __init__(
        self,
        backend: UIBackend | None = None,
        *,
        backend_name: str | None = None,
        app_name: str | None = None,
        pid: int | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        call_timeout: float = 20.0,
        launch: Sequence[str] | None = None,
        launch_cwd: str | None = None,
        attach_timeout: float | None = None,
        launch_env_passthrough: Sequence[str] = (),
    ) -> None:
        self.launched: subprocess.Popen[bytes] | None = None
        if launch:
            # The application gets loopkit's allowlisted environment (display, D-Bus, AT-SPI,
            # Qt, locale, ...) plus the passthrough, never a key the server's environment holds.
            env = child_environment(launch_env_passthrough)
            # Our own child in its own process group: ended with us.
            group: dict[str, Any] = (
                {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
                if sys.platform == "win32"
                else {"start_new_session": True}
            )
            self.launched = subprocess.Popen(
                list(launch), cwd=launch_cwd, env=env, stdin=subprocess.DEVNULL, **group
            )
            pid = self.launched.pid
        # Each accessibility call gets at most half the tool call's time, so a hung application
        # yields a precise "did not answer" error well before the call's own deadline.
        config: dict[str, Any] = {"timeout": min(5.0, call_timeout / 2)}
        if app_name:
            config["app_name"] = app_name
        if pid is not None:
            config["pid"] = pid
        if attach_timeout is not None:
            config["attach_timeout"] = attach_timeout
        self.backend = backend or create_backend(backend_name, **config)
        self.call_timeout = call_timeout
        # Trees and screenshots show what the app shows: folders 0700, files 0600. The default
        # folder is a fresh one (mkdtemp: 0700, a name nobody can guess or plant beforehand).
        self.output_dir = (
            make_private_dir(Path(output_dir))
            if output_dir
            else Path(tempfile.mkdtemp(prefix="loopkit-ui-"))
        )
        self._counter = itertools.count(1)

    def next_path(self, kind: str, suffix: str) -> Path:
        """A new, empty 0600 file in the output folder, e.g. ``tree-003-142501.txt`` (written
        into afterwards, it keeps its mode). Never an existing file or a symlink planted there:
        a name that is taken is skipped."""
        while True:
            stamp = time.strftime("%H%M%S")
            path = self.output_dir / f"{kind}-{next(self._counter):03d}-{stamp}{suffix}"
            try:
                return create_private_file(path)
            except FileExistsError:
                continue  # another server writing to the same folder took this name

    async def run(self, fn: Callable[[], _T], *, limit: float | None = None) -> _T:
        """Run a blocking backend call in a worker thread, bounded by ``limit`` seconds."""
        limit = limit or self.call_timeout
        try:
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        except TimeoutError as error:
            raise UITimeoutError(
                f"the call did not finish within {limit:g} s; the application may be blocked "
                "(a modal dialog, a busy UI thread). Take a screenshot or list the windows."
            ) from error

    async def call(self, fn: Callable[[], Any], *, limit: float | None = None) -> CallToolResult:
        """Run ``fn`` and answer with its result, or with its UIError as an error answer."""
        try:
            return answer(await self.run(fn, limit=limit))
        except UIError as error:
            return answer(f"{type(error).__name__}: {error}", error=True)
        except ValueError as error:  # pydantic validation of locators and arguments
            return answer(f"invalid arguments: {error}", error=True)

    def close(self) -> None:
        """Close the backend and end an application we launched."""
        self.backend.close()
        if self.launched is not None and self.launched.poll() is None:
            try:
                if sys.platform == "win32":
                    self.launched.terminate()
                else:
                    os.killpg(self.launched.pid, signal.SIGTERM)
                self.launched.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.launched.kill()
                self.launched.wait(5)

    @staticmethod
    def parse_launch(command: str | None) -> list[str] | None:
        """Split a ``--launch`` command line (shell quoting) into argv."""
        return shlex.split(command) if command else None
