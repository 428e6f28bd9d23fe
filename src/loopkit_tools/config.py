"""``ToolsConfig``: everything the local tools need, as one pydantic model.

The card runner embeds it in its TOML configuration under ``[tools]``. Every path in it is relative
to ``root``; the defaults fit the demo's scratch repository (``<root>/invoice_app`` writable,
``<root>/docs`` readable).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loopkit.child_env import check_passthrough


def _check_relative_folder(value: str, what: str) -> str:
    """A configured folder must be a plain relative POSIX path without ``..`` or ``.git``."""
    if not value or "\x00" in value or "\\" in value:
        raise ValueError(f"{what} {value!r}: expected a relative folder like 'invoice_app'")
    p = PurePosixPath(value)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"{what} {value!r}: must be relative to root and must not contain '..'")
    if any(part.casefold() == ".git" for part in p.parts):
        raise ValueError(f"{what} {value!r}: the .git folder can never be read or written")
    normalized = p.as_posix()
    return "." if normalized in ("", ".") else normalized


class WindowCheck(Protocol):
    """Whether the application ``app_name`` shows a window, waiting at most ``timeout`` seconds:
    the check behind ``app_ready`` kind ``window``. It blocks (``start_app`` calls it in a worker
    thread) and answers False when no window is shown in time. The UI package has one,
    ``wait_app.window_shown`` (the ``ui`` extra); whoever assembles the tools passes it to
    :class:`~loopkit_tools.LocalTools` (this package never imports the UI package)."""

    def __call__(self, app_name: str, timeout: float) -> bool: ...


class ReadyCheck(BaseModel):
    """How ``start_app`` decides the app is ready (the app may not expose a "window appears" event).

    - ``delay``: wait ``delay_s`` seconds (and fail if the app died meanwhile).
    - ``file``: wait until ``path`` (relative to root, or absolute) exists.
    - ``command``: run ``command`` (argv) every ``interval_s`` until it exits with status 0.
    - ``window``: wait until the application ``app_name`` shows a window on the accessibility bus,
      checked in this process by the :class:`WindowCheck` given to ``LocalTools`` (no probe).
    The app is checked between polls: if it exits, ``start_app`` reports its exit code and output.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["delay", "file", "command", "window"]
    delay_s: float = Field(default=1.0, ge=0)
    path: str | None = None
    command: list[str] | None = None
    app_name: str | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    interval_s: float = Field(default=0.1, gt=0)

    @model_validator(mode="after")
    def _fields_for_kind(self) -> ReadyCheck:
        if self.kind == "file" and not self.path:
            raise ValueError(
                "app_ready kind 'file' needs 'path' (the file whose existence means ready)"
            )
        if self.kind == "command" and not self.command:
            raise ValueError("app_ready kind 'command' needs 'command' (an argv list)")
        if self.kind == "window" and not self.app_name:
            raise ValueError(
                "app_ready kind 'window' needs 'app_name' (the application's accessible name or "
                "a word of its command line)"
            )
        return self


class ToolsConfig(BaseModel):
    """Configuration of :class:`loopkit_tools.LocalTools` (a runner config's ``[tools]`` table)."""

    model_config = ConfigDict(extra="forbid")

    root: Path = Field(default=Path("."), description="The workspace (a git repository's top).")
    read_folders: list[str] = Field(
        default_factory=lambda: ["invoice_app", "docs"],
        description="Folders the model may list and read (write_folders are readable too).",
    )
    write_folders: list[str] = Field(
        default_factory=lambda: ["invoice_app"],
        description="Folders the model may write; git_commit stages only these.",
    )
    max_file_bytes: int = Field(default=100_000, gt=0, description="read cut / write limit")
    max_read_chars: int = Field(
        default=3500,
        ge=200,
        description="read_file answers in parts of whole lines up to this size (below the loop's "
        "4,000-character cut, so a part is never cut mid-line)",
    )
    max_output_lines: int = Field(default=60, gt=0, description="cap of listings and build output")
    list_exclude: list[str] = Field(
        default_factory=lambda: ["__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache"],
        description="fnmatch patterns of names list_files leaves out (noise, not a guard).",
    )

    build_command: list[str] = Field(
        default_factory=lambda: [sys.executable, "-m", "invoice_app.build"]
    )
    build_cwd: str = "."
    build_env: dict[str, str] = Field(
        default_factory=dict,
        description="Set for the build and the tests on top of their allowlisted environment.",
    )
    build_timeout_s: float = Field(default=120.0, gt=0)
    build_requires_stopped_app: bool = Field(
        default=True, description="build_app refuses while the app runs (it would test stale code)."
    )

    app_command: list[str] = Field(default_factory=lambda: [sys.executable, "-m", "invoice_app"])
    app_env: dict[str, str] = Field(
        default_factory=lambda: {"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1"},
        description="Set for the app on top of its allowlisted environment (see env_passthrough).",
    )
    app_cwd: str = "."
    app_ready: ReadyCheck | None = Field(default_factory=lambda: ReadyCheck(kind="delay"))
    app_output_file: Path | None = Field(
        default=None,
        description="Where the app's stdout/stderr go (absolute, or relative to root); "
        "default: a temporary file per LocalTools instance.",
    )
    stop_grace_s: float = Field(default=5.0, ge=0)
    env_passthrough: list[str] = Field(
        default_factory=lambda: ["INVOICE_APP_*"],
        description="Variables of the runner's environment that the build, app, tests and "
        "readiness checks get besides the allowlist (PATH, locale, display, D-Bus/AT-SPI, Qt, "
        "Python, LOOPKIT_*): names or glob patterns. A secret-looking name (KEY, TOKEN, SECRET, "
        "PASSWORD, PASSWD, CREDENTIAL, PAT) passes only when named exactly, not by a pattern.",
    )

    test_command: list[str] | None = None
    test_cwd: str = "."
    test_timeout_s: float = Field(default=300.0, gt=0)

    commit_message_pattern: str = Field(
        default=r"^card: .+", description="regex the first line of a commit message must match"
    )
    commit_requires_build: bool = Field(
        default=False,
        description="git_commit refuses while the code (build_inputs) changed since the last "
        "successful build_app (or since the start, before any build): build first",
    )
    build_inputs: list[str] | None = Field(
        default=None,
        description="The folders the build compiles, for commit_requires_build (default: the "
        "write folders)",
    )
    build_state_file: Path | None = Field(
        default=None,
        description="Where the code as last built is kept (absolute, or relative to root), so a "
        "new process (a resumed durable run) knows it; default: in memory only",
    )
    git_command: list[str] = Field(default_factory=lambda: ["git"])
    git_author_name: str | None = None
    git_author_email: str | None = None

    @field_validator("read_folders", "write_folders")
    @classmethod
    def _folders(cls, value: list[str]) -> list[str]:
        return [_check_relative_folder(v, "folder") for v in value]

    @field_validator("build_inputs")
    @classmethod
    def _inputs(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_check_relative_folder(v, "folder") for v in value]

    @field_validator("env_passthrough")
    @classmethod
    def _passthrough(cls, value: list[str]) -> list[str]:
        return check_passthrough(value)

    @field_validator("build_cwd", "app_cwd", "test_cwd")
    @classmethod
    def _cwd(cls, value: str) -> str:
        return _check_relative_folder(value, "working directory")

    @field_validator("build_command", "app_command", "git_command")
    @classmethod
    def _argv(cls, value: list[str]) -> list[str]:
        if not value or not value[0]:
            raise ValueError("expected a non-empty argv list like ['python', '-m', 'invoice_app']")
        return value

    @field_validator("test_command")
    @classmethod
    def _test_argv(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0]):
            raise ValueError("test_command: expected a non-empty argv list or nothing")
        return value

    @field_validator("commit_message_pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as e:
            raise ValueError(f"commit_message_pattern {value!r} is not a valid regex: {e}") from e
        return value

    @model_validator(mode="after")
    def _writable_needed(self) -> ToolsConfig:
        if not self.write_folders:
            raise ValueError("write_folders is empty: the model needs one folder to change")
        return self

    def resolved_root(self) -> Path:
        """``root`` made absolute (relative roots are taken from the current directory)."""
        return self.root.expanduser().resolve()
