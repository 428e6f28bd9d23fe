"""What an :class:`~loopkit.mcp.MCPClient` connects to: a server command run as a child process
(:class:`StdioTarget`) or a streamable-HTTP endpoint (:class:`HttpTarget`), with what is known
before connecting: why a command cannot start, the child's environment, and a URL fit for
messages (no secrets).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from loopkit.child_env import child_environment

__all__ = ["HttpTarget", "StdioTarget", "command_problem", "redacted_url", "server_env"]


@dataclass(frozen=True)
class StdioTarget:
    """A server run as a child process: its command line, environment and folder."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str] | None = field(default=None, repr=False)  # may hold secrets
    inherit_env: bool = False
    cwd: str | None = None
    env_passthrough: tuple[str, ...] = ()


@dataclass(frozen=True)
class HttpTarget:
    """A server at a streamable-HTTP endpoint, and the headers every request carries."""

    url: str = field(repr=False)  # may carry credentials in userinfo or query
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold tokens


def redacted_url(url: str) -> str:
    """The URL for messages: no userinfo and no query string (either may carry a secret)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def command_problem(target: StdioTarget) -> str | None:
    """Why ``target.command`` cannot start, or None; checked before paying for ``import mcp``."""
    command = target.command
    if not command:
        return "the command is empty"
    if os.sep in command or (os.altsep and os.altsep in command):
        path = Path(command)
        where = ""
        if target.cwd and not path.is_absolute():
            path = Path(target.cwd) / path
            where = f" (in {target.cwd})"
        if not path.exists():
            return f"{command!r} does not exist{where}"
        if path.is_dir() or not os.access(path, os.X_OK):
            return f"{command!r} is not an executable file{where}"
        return None
    search_path = (target.env or {}).get("PATH") or os.environ.get("PATH")
    if shutil.which(command, path=search_path) is None:
        return f"{command!r} was not found on PATH"
    return None


def server_env(target: StdioTarget) -> dict[str, str] | None:
    """The variables a stdio server gets on top of the SDK's defaults: the configured ones, or,
    with ``inherit_env`` or ``env_passthrough``, the allowlisted environment with them."""
    if target.inherit_env or target.env_passthrough:
        return child_environment(
            target.env_passthrough, extra=target.env, allowlist=target.inherit_env
        )
    return target.env
