"""``MCPServerConfig``: one MCP server as data (a command for stdio, or a URL for streamable HTTP).

Made for configuration files: the card runner's TOML describes each server in a table, e.g.::

    [mcp.servers.ui]
    command = ["python", "-m", "loopkit_ui.server"]
    env = { QT_LINUX_ACCESSIBILITY_ALWAYS_ON = "1" }
    inherit_env = true
    call_timeout = 30

    [mcp.servers.search]
    url = "http://127.0.0.1:8931/mcp"
    headers = { Authorization = "Bearer ..." }
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loopkit.child_env import check_passthrough
from loopkit.mcp.client import DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, MCPClient

if TYPE_CHECKING:
    from loopkit.mcp.waiting_server import WaitingPythonServer


class MCPServerConfig(BaseModel):
    """How to reach one MCP server: exactly one of ``command`` (stdio) or ``url`` (HTTP).

    ``env``, ``inherit_env``, ``env_passthrough`` and ``cwd`` apply to a command (a child never
    gets a secret-looking variable it is not given by name); ``headers`` to a URL. Timeouts are
    in seconds. ``tool_prefix`` goes in front of every tool name (to keep two servers' tools
    apart). :meth:`connect` returns an unopened :class:`MCPClient`; use it with ``async with``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="A short name for messages and logs.")
    command: list[str] | None = Field(
        default=None, description="Program and arguments of a stdio server: ['python', 'x.py']."
    )
    url: str | None = Field(default=None, description="Endpoint of a streamable-HTTP server.")
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    inherit_env: bool = Field(
        default=False,
        description="Pass loopkit's allowlist of this process's environment (PATH, locale, "
        "display, D-Bus/AT-SPI, Qt, Python, LOOPKIT_*), never a secret-looking variable; "
        "without it the server gets only HOME, LOGNAME, PATH, SHELL, TERM and USER.",
    )
    env_passthrough: list[str] = Field(
        default_factory=list,
        description="More variables for the server, by name or glob pattern; a secret-looking "
        "name (KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, PAT) passes only when named "
        "exactly.",
    )
    cwd: Path | None = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    startup_timeout: float = Field(default=DEFAULT_STARTUP_TIMEOUT, gt=0)
    call_timeout: float = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)
    tool_prefix: str = ""

    @field_validator("command")
    @classmethod
    def _command_not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0].strip()):
            raise ValueError("command must be a non-empty list: the program, then its arguments")
        return value

    @field_validator("env_passthrough")
    @classmethod
    def _passthrough(cls, value: list[str]) -> list[str]:
        return check_passthrough(value)

    @field_validator("url")
    @classmethod
    def _url_is_http(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    "url must be an http:// or https:// address with a host, "
                    f"e.g. http://127.0.0.1:8000/mcp (got scheme {parts.scheme!r})"
                )
        return value

    @model_validator(mode="after")
    def _exactly_one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            given = "both" if self.command is not None else "neither"
            raise ValueError(
                f"an MCP server needs exactly one of `command` (stdio) or `url` (streamable "
                f"HTTP); {given} given"
            )
        if self.url is not None and (
            self.env or self.inherit_env or self.env_passthrough or self.cwd is not None
        ):
            raise ValueError(
                "env, inherit_env, env_passthrough and cwd apply to a `command` server, not a `url`"
            )
        if self.command is not None and self.headers:
            raise ValueError("headers apply to a `url` server, not a `command`")
        return self

    def connect(self, *, prestarted: WaitingPythonServer | None = None) -> MCPClient:
        """An :class:`MCPClient` for this server (not yet connected: use ``async with``);
        ``prestarted``: a waiting server it uses when that runs this command."""
        if self.command is not None:
            return MCPClient.stdio(
                self.command[0],
                self.command[1:],
                env=self.env or None,
                inherit_env=self.inherit_env,
                env_passthrough=self.env_passthrough,
                cwd=self.cwd,
                startup_timeout=self.startup_timeout,
                call_timeout=self.call_timeout,
                tool_prefix=self.tool_prefix,
                name=self.name,
                prestarted=prestarted,
            )
        assert self.url is not None
        return MCPClient.http(
            self.url,
            headers=self.headers,
            startup_timeout=self.startup_timeout,
            call_timeout=self.call_timeout,
            tool_prefix=self.tool_prefix,
            name=self.name,
        )
