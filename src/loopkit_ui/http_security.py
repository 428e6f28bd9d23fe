"""Who may use the UI server over HTTP: moved to :mod:`loopkit.mcp.http_security` (an agent
served as an MCP tool follows the same rules); re-exported here for the UI server."""

from __future__ import annotations

from loopkit.mcp.http_security import (
    HttpAddress,
    StaticTokenVerifier,
    TokenFile,
    allowed_host_name,
    http_options,
    listen,
    parse_http_address,
    read_token_file,
)

__all__ = [
    "HttpAddress",
    "StaticTokenVerifier",
    "TokenFile",
    "allowed_host_name",
    "http_options",
    "listen",
    "parse_http_address",
    "read_token_file",
]
