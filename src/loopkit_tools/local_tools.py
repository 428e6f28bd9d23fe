"""``LocalTools``: the nine guarded local tools (plus optional ``run_tests``) as loopkit Tools.

There is no shell: the model can list, search, read, write and edit files inside the allowed
folders, build,
start and stop the configured app, run its tests and commit the writable folders. Nothing else.
Every path goes through :class:`~loopkit_tools.workspace.WorkspaceGuard` first.

Usage::

    async with LocalTools(ToolsConfig(root=repo)) as local:
        client = builder.use_function_invocation().build()
        options = ChatOptions(tools=[*local.tools, *ui_tools])
        ...
    # the app is stopped here, whatever happened inside the block
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Annotated, Any

from loopkit.abstractions import FunctionTool, Tool, ToolError
from loopkit_tools.build_state import BuildState
from loopkit_tools.condense import condense
from loopkit_tools.config import ReadyCheck, ToolsConfig, WindowCheck
from loopkit_tools.git import GitCommitter
from loopkit_tools.paging import page_lines
from loopkit_tools.processes import ProcessGroup, run_command
from loopkit_tools.workspace import WorkspaceGuard


class LocalTools:
    """The local tools of one run, configured by a :class:`ToolsConfig`; an async context manager.

    On exit (normal, exception or cancellation) the app is stopped with its whole process group.
    Processes also never outlive the Python process itself (see :mod:`loopkit_tools.processes`).
    """

    def __init__(
        self, config: ToolsConfig | None = None, *, window_check: WindowCheck | None = None
    ) -> None:
        self.config = config or ToolsConfig()
        #: The check of ``app_ready`` kind ``window`` (the UI package's ``wait_app.window_shown``).
        self.window_check = window_check
        self.root = self.config.resolved_root()
        self.guard = WorkspaceGuard(
            self.root,
            self.config.read_folders,
            self.config.write_folders,
            max_file_bytes=self.config.max_file_bytes,
            max_list_entries=self.config.max_output_lines,
            list_exclude=self.config.list_exclude,
        )
        self.git = GitCommitter(
            self.root,
            self.guard.write_folders,
            self.config.commit_message_pattern,
            git=self.config.git_command,
            author_name=self.config.git_author_name,
            author_email=self.config.git_author_email,
        )
        self.build_state: BuildState | None = None
        if self.config.commit_requires_build:
            state_file = self.config.build_state_file
            if state_file is not None and not state_file.is_absolute():
                state_file = self.root / state_file
            self.build_state = BuildState(
                self.root,
                self.config.build_inputs
                if self.config.build_inputs is not None
                else self.guard.write_folders,
                exclude=self.config.list_exclude,
                state_file=state_file,
            )
        self._app: ProcessGroup | None = None
        self._app_output: Path | None = None
        self._own_output_dir: tempfile.TemporaryDirectory[str] | None = None
        self._lock = asyncio.Lock()  # one process operation at a time (parallel tool calls)
        self._edit_lock = threading.Lock()  # edits read, change and write a file: one at a time
        # A plain attribute (not a property) so LocalTools satisfies loopkit.cards.ToolSource.
        self.tools: list[Tool] = self._make_tools()
        """The tools to hand to the model: nine, plus ``run_tests`` when a test command is set."""

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> LocalTools:
        if self.build_state is not None:
            # The code as the run finds it: a run that changes nothing commits without a build.
            await asyncio.to_thread(self.build_state.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the app if it runs and remove the temporary output folder. Safe to call twice."""
        app, self._app = self._app, None
        if app is not None:
            # shield: a cancelled run must still finish stopping its processes
            await asyncio.shield(app.stop(self.config.stop_grace_s))
        if self._own_output_dir is not None:
            self._own_output_dir.cleanup()
            self._own_output_dir = None

    @property
    def app_pid(self) -> int | None:
        """The pid of the running app, if any."""
        return self._app.pid if self._app is not None and self._app.alive() else None

    # ------------------------------------------------------------------ file tools

    def list_files(
        self,
        folder: Annotated[str, "a folder relative to the workspace; empty for all readable"] = "",
    ) -> str:
        listing = self.guard.listing(folder)
        notes = listing.notes()
        if not listing.files and not notes:
            return f"(no files under {folder or 'the readable folders'})"
        return "\n".join([*listing.files, *notes])

    def search_files(
        self,
        text: Annotated[str, "the exact text to find (case-sensitive), e.g. 'def total'"],
        folder: Annotated[str, "a folder relative to the workspace; empty for all readable"] = "",
    ) -> str:
        if not text or "\n" in text:
            raise ToolError("text: expected the text of one line to find, not empty")
        limit = self.config.max_output_lines
        found: list[str] = []
        more = skipped = 0
        listing = self.guard.listing(folder)
        for path in listing.files:
            try:
                content = self.guard.read_text(path)
            except ToolError:  # binary, not UTF-8, gone meanwhile: nothing to find in it
                skipped += 1
                continue
            for number, line in enumerate(content.splitlines(), start=1):
                if text in line:
                    if len(found) < limit:
                        shown = line if len(line) <= 200 else line[:200] + "…"
                        found.append(f"{path}:{number}: {shown}")
                    else:
                        more += 1
        notes = [f"[{more} more matching lines not shown; search a folder or a longer text]"]
        notes = notes if more else []
        if skipped:
            notes.append(f"[{skipped} files not searched: binary or not UTF-8]")
        notes.extend(listing.notes())
        if not found:
            return "\n".join(
                [f"(no line contains {text!r} under {folder or 'the readable folders'})", *notes]
            )
        return "\n".join([*found, *notes])

    def read_file(
        self,
        path: Annotated[str, "a file path relative to the workspace"],
        start_line: Annotated[int, "the first line to show (from 1)"] = 1,
        max_lines: Annotated[
            int | None, "at most this many lines (default: as many as fit)"
        ] = None,
        start_column: Annotated[
            int, "where in start_line to begin (from 1), for the rest of a very long line"
        ] = 1,
    ) -> str:
        text = self.guard.read_text(path)
        return page_lines(
            text, start_line, max_lines, self.config.max_read_chars, start_column=start_column
        )

    def write_file(
        self,
        path: Annotated[str, "a file path relative to the workspace, in a writable folder"],
        content: Annotated[str, "the complete new content of the file, not a diff or an excerpt"],
    ) -> str:
        size = self.guard.write_text(path, content)
        return f"Wrote {path} ({size} bytes)."

    def edit_file(
        self,
        path: Annotated[str, "a file path relative to the workspace, in a writable folder"],
        old: Annotated[str, "the exact text to replace, as read_file shows it; unique in the file"],
        new: Annotated[str, "the text that replaces it"],
    ) -> str:
        if not old:
            raise ToolError("old is empty; give the exact text to replace (or use write_file)")
        with self._edit_lock:
            text = self.guard.read_text(path)
            if text.endswith(" are shown]") and "\n[... cut: the file has " in text:
                raise ToolError(
                    f"{path} is larger than the file size limit; it cannot be edited in place"
                )
            found = text.count(old)
            if found != 1:
                hint = (
                    "check it against read_file (spaces, indentation, line ends)"
                    if found == 0
                    else "include more of the surrounding lines to make it unique"
                )
                raise ToolError(
                    f"old occurs {found} times in {path}; it must occur exactly once: {hint}"
                )
            start = text.index(old)
            line = text.count("\n", 0, start) + 1
            size = self.guard.write_text(path, text.replace(old, new, 1))
        shown = f"lines {line}-{line + new.count(chr(10))}" if "\n" in new else f"line {line}"
        return f"Edited {path}: {shown} now hold the new text ({size} bytes in all)."

    # ------------------------------------------------------------------ build and tests

    def _cwd(self, rel: str) -> Path:
        return self.root if rel == "." else self.root / rel

    def _relative(self, output: str) -> str:
        """Workspace-relative paths in command output: shorter, and the root stays private."""
        return output.replace(f"{self.root}{os.sep}", "")

    async def build_app(self) -> str:
        async with self._lock:
            if self.config.build_requires_stopped_app and self.app_pid is not None:
                raise ToolError(
                    f"the app is running (pid {self.app_pid}); call stop_app first, then build_app"
                )
            # The code the build compiles: what it was when the build started.
            code = (
                await asyncio.to_thread(self.build_state.snapshot)
                if self.build_state is not None
                else None
            )
            result = await run_command(
                self.config.build_command,
                cwd=self._cwd(self.config.build_cwd),
                env=self.config.build_env,
                passthrough=self.config.env_passthrough,
                timeout_s=self.config.build_timeout_s,
            )
        if result.timed_out:
            summary = f"Build timed out after {self.config.build_timeout_s:g} s and was stopped."
        elif result.exit_code == 0:
            summary = "Build succeeded."
            if self.build_state is not None and code is not None:
                await asyncio.to_thread(self.build_state.built, code)
        else:
            summary = f"Build failed with exit code {result.exit_code}."
        return condense(summary, self._relative(result.output), self.config.max_output_lines)

    async def run_tests(self) -> str:
        command = self.config.test_command
        if command is None:  # the tool is not offered then; a direct call still answers clearly
            raise ToolError("no test command is configured for this workspace")
        async with self._lock:
            result = await run_command(
                command,
                cwd=self._cwd(self.config.test_cwd),
                env=self.config.build_env,
                passthrough=self.config.env_passthrough,
                timeout_s=self.config.test_timeout_s,
            )
        if result.timed_out:
            summary = f"Tests timed out after {self.config.test_timeout_s:g} s and were stopped."
        elif result.exit_code == 0:
            summary = "Tests passed."
        else:
            summary = f"Tests failed with exit code {result.exit_code}."
        return condense(summary, self._relative(result.output), self.config.max_output_lines)

    # ------------------------------------------------------------------ the app

    def _output_path(self) -> Path:
        if self.config.app_output_file is not None:
            p = self.config.app_output_file
            return p if p.is_absolute() else self.root / p
        if self._own_output_dir is None:
            self._own_output_dir = tempfile.TemporaryDirectory(prefix="loopkit-app-")
        return Path(self._own_output_dir.name) / "app-output.log"

    def _output_tail(self, start: int) -> str:
        if self._app_output is None:
            return ""
        try:
            with self._app_output.open("rb") as f:
                f.seek(start)
                return f.read()[-200_000:].decode("utf-8", errors="replace")
        except OSError:
            return ""

    async def _wait_ready(self, app: ProcessGroup, check: ReadyCheck) -> str:
        """Poll the readiness check; raise if the app dies or the check times out."""
        end = time.monotonic() + (check.delay_s if check.kind == "delay" else check.timeout_s)
        while True:
            if app.returncode is not None:
                return "exited"
            if check.kind == "delay":
                if time.monotonic() >= end:
                    return f"running after {check.delay_s:g} s"
            elif check.kind == "window":
                if await self._window_shown(check, end):
                    return "ready (readiness check passed)"  # as a probe command's
            elif check.kind == "file":
                assert check.path is not None
                p = Path(check.path)
                if (p if p.is_absolute() else self.root / p).exists():
                    return f"ready ({check.path} exists)"
            else:
                assert check.command is not None
                probe = await run_command(
                    check.command,
                    cwd=self.root,
                    env=self.config.app_env,
                    passthrough=self.config.env_passthrough,
                    timeout_s=check.timeout_s,
                )
                if probe.exit_code == 0:
                    return "ready (readiness check passed)"
            if time.monotonic() >= end:
                return "timeout"
            await asyncio.sleep(check.interval_s)

    async def _window_shown(self, check: ReadyCheck, end: float) -> bool:
        """Whether the app shows a window on the accessibility bus (waiting at most 3 s: the app
        is checked between calls)."""
        if self.window_check is None:
            raise ToolError(
                "app_ready kind 'window' needs a window check: pass LocalTools(config, "
                "window_check=...) the UI package's wait_app.window_shown (the ui extra), or use "
                "kind 'command' or 'delay'"
            )
        assert check.app_name is not None
        within = min(3.0, max(0.05, end - time.monotonic()))
        return await asyncio.to_thread(self.window_check, check.app_name, within)

    async def start_app(self) -> str:
        async with self._lock:
            if self._app is not None and self._app.alive():
                return (
                    f"The app is already running (pid {self._app.pid}); nothing started. "
                    "Call stop_app first to restart it."
                )
            if self._app is not None:  # it exited on its own: clean its group up
                await self._app.stop(0)
                self._app = None
            out_path = self._output_path()
            out_path.parent.mkdir(parents=True, exist_ok=True)
            self._app_output = out_path
            start = out_path.stat().st_size if out_path.exists() else 0
            out: IO[bytes] = out_path.open("ab")
            try:
                app = await ProcessGroup.start(
                    self.config.app_command,
                    cwd=self._cwd(self.config.app_cwd),
                    env=self.config.app_env,
                    passthrough=self.config.env_passthrough,
                    stdout=out,
                    grace_s=self.config.stop_grace_s,
                )
            finally:
                out.close()  # the child has its own copy
            self._app = app
            state = "started"
            if self.config.app_ready is not None:
                try:
                    state = await self._wait_ready(app, self.config.app_ready)
                except BaseException:
                    await app.stop(self.config.stop_grace_s)
                    self._app = None
                    raise
            if state in ("exited", "timeout"):
                await app.stop(self.config.stop_grace_s)
                self._app = None
                tail = self._relative(self._output_tail(start))
                ready = self.config.app_ready
                if state == "exited":
                    summary = f"The app exited at start with code {app.returncode}."
                elif ready is not None and ready.kind == "window":
                    summary = (
                        f"The app showed no window on the accessibility bus within "
                        f"{ready.timeout_s:g} s (looked for {ready.app_name!r}) and was stopped."
                    )
                else:
                    summary = "The app did not become ready in time and was stopped."
                raise ToolError(condense(summary, tail, self.config.max_output_lines))
            return f"The app is running (pid {app.pid}); {state}."

    async def stop_app(self) -> str:
        async with self._lock:
            app, self._app = self._app, None
            if app is None:
                return "The app is not running; nothing to stop."
            pid = app.pid
            how = await asyncio.shield(app.stop(self.config.stop_grace_s))
            return f"The app (pid {pid}) {how}; no process of it is left."

    # ------------------------------------------------------------------ git

    async def git_commit(
        self,
        message: Annotated[
            str, "first line as required (e.g. 'card: <title>'), then a blank line and a short body"
        ],
    ) -> str:
        async with self._lock:
            if self.build_state is not None:
                changed = await asyncio.to_thread(self.build_state.changed)
                if changed:
                    shown = ", ".join(changed[:5]) + (
                        f" and {len(changed) - 5} more" if len(changed) > 5 else ""
                    )
                    raise ToolError(
                        f"not committed: the code changed since the last successful build "
                        f"({shown}); build first: stop_app, build_app (it must succeed), check "
                        "the change in the app again, then git_commit"
                    )
            result = await self.git.commit(message)
        return str(result)

    # ------------------------------------------------------------------ descriptions

    def _make_tools(self) -> list[Tool]:
        g = self.guard
        readable = ", ".join(f"{f}/" for f in g.read_folders)
        writable = ", ".join(f"{f}/" for f in g.write_folders)
        build = " ".join(
            Path(a).name if i == 0 else a for i, a in enumerate(self.config.build_command)
        )
        descriptions = {
            "list_files": (
                f"Lists the files under a folder (readable: {readable}), one relative path a "
                "line. Notes at the end say what was left out."
            ),
            "search_files": (
                "Finds the lines containing a text in the files under a folder: path:line: the "
                "line. Then read_file from that line with max_lines."
            ),
            "read_file": (
                f"Reads a text file under {readable} (path as list_files shows it). A long file "
                "comes in parts of whole lines; the note at the end gives the start_line (and "
                "start_column) of the next part."
            ),
            "write_file": (
                f"Writes a file under {writable} with its COMPLETE new content (creates it and "
                "its folders). For a change to part of a file use edit_file."
            ),
            "edit_file": (
                f"Changes part of a file under {writable}: replaces the exact text old (as "
                "read_file shows it, indentation included; it must occur exactly once) with new."
            ),
            "build_app": (
                f"Builds the app ({build}). Call stop_app first if it runs. Returns a summary "
                "line and the error and warning lines."
            ),
            "start_app": (
                "Starts the app to verify it through the UI tools (build_app first after a "
                "change). Returns its pid, or its errors if it crashes at start."
            ),
            "stop_app": "Stops the app and its processes: before build_app and when done.",
            "git_commit": (
                f"Commits the changes under {writable} once verified live. The message's first "
                f"line must match {self.config.commit_message_pattern!r} (e.g. 'card: <card "
                "title>'); the body says what changed and how it was verified."
            ),
            "run_tests": (
                "Runs the app's own tests. Returns a summary line and the failure, error and "
                "warning lines."
            ),
        }
        tools: list[Tool] = []
        for name in (
            "list_files",
            "search_files",
            "read_file",
            "write_file",
            "edit_file",
            "build_app",
            "start_app",
            "stop_app",
            "git_commit",
        ):
            tools.append(self._tool(name, descriptions[name]))
        if self.config.test_command is not None:
            tools.append(self._tool("run_tests", descriptions["run_tests"]))
        return tools

    def _tool(self, name: str, description: str) -> FunctionTool:
        fn: Any = getattr(self, name)
        # File tools are sync and run in a worker thread; process tools are async so processes
        # are always forked from the event-loop thread (PR_SET_PDEATHSIG is per thread).
        return FunctionTool(fn, name=name, description=description)
