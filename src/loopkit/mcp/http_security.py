"""Who may use an MCP server of loopkit's over HTTP (the UI server, an agent served as an MCP
tool): the address it binds, the Host and Origin it accepts, and the bearer token every request
must carry.

- The address: ``HOST:PORT`` or ``[IPV6]:PORT``; loopback (127.0.0.0/8, ::1) unless the caller
  allows a remote one explicitly.
- Host and Origin: exact values, never patterns. A request whose Host is not the bound address
  (or, on loopback, ``localhost``/``127.0.0.1``/``[::1]``, or a name given with ``--allow-host``)
  gets 421, an Origin that is not ``http(s)://`` one of those gets 403: a page whose name was
  rebound to this machine (DNS rebinding) is refused. Enforced by the ``mcp`` SDK's
  ``TransportSecuritySettings``.
- The token: a ``secrets.token_urlsafe`` value in a 0600 file inside a 0700 folder, or the
  caller's own file, which must be private too. It is compared in constant time by the SDK's
  bearer middleware through :class:`StaticTokenVerifier`; a request without it gets 401 with
  ``WWW-Authenticate: Bearer``. The token itself is never printed or logged, only its path.

The heavy ``mcp`` imports happen inside the functions that need them, so the command line can
check its input before loading them.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from loopkit.command_line import BadInput, shown
from loopkit.private_files import create_private_file

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.transport_security import TransportSecuritySettings

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

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MIN_TOKEN_CHARS = 16
MAX_TOKEN_BYTES = 4096
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")  # visible ASCII: what an HTTP header carries as is
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_EXAMPLE = "e.g. 127.0.0.1:8765 or [::1]:8765"


@dataclass(frozen=True)
class HttpAddress:
    """Where the server listens: ``ip`` (what is bound), ``port`` (0: any free one) and the
    names a client may send as Host besides the bound address (``names``)."""

    ip: IPAddress
    port: int
    names: tuple[str, ...] = field(default=())

    @property
    def loopback(self) -> bool:
        """Only this machine can connect (127.0.0.0/8, ::1)."""
        return self.ip.is_loopback

    @property
    def family(self) -> socket.AddressFamily:
        """The socket family for :attr:`ip`."""
        return socket.AF_INET6 if self.ip.version == 6 else socket.AF_INET

    def url_host(self) -> str:
        """The address as it appears in a URL and a Host header (IPv6 in brackets)."""
        return f"[{self.ip}]" if self.ip.version == 6 else str(self.ip)

    def accepted_hosts(self, port: int) -> list[str]:
        """Every Host header value accepted once bound to ``port``: exact ``name:port`` pairs
        (and the bare name on port 80, where clients omit it)."""
        names: list[str] = []
        if not self.ip.is_unspecified:  # 0.0.0.0 / :: is nobody's Host
            names.append(self.url_host())
        if self.ip.is_loopback or self.ip.is_unspecified:
            # Fixed names that no outside DNS can point elsewhere.
            names.extend(_LOOPBACK_NAMES)
        names.extend(self.names)
        unique = list(dict.fromkeys(names))
        hosts = [f"{name}:{port}" for name in unique]
        return hosts + (unique if port == 80 else [])

    def transport_security(self, port: int) -> TransportSecuritySettings:
        """The SDK's Host/Origin check for exactly :meth:`accepted_hosts` (no wildcards: the
        SDK's ``:*`` patterns match by prefix, so ``127.0.0.1:*`` would let
        ``127.0.0.1:80.evil.com`` through)."""
        from mcp.server.transport_security import TransportSecuritySettings

        hosts = self.accepted_hosts(port)
        origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )


def parse_http_address(
    text: str, *, allow_remote: bool = False, allow_hosts: tuple[str, ...] = ()
) -> HttpAddress:
    """``--http`` as an :class:`HttpAddress` (BadInput naming what is wrong)."""
    match = re.fullmatch(r"\[([^\[\]]*)\]:([^:]*)", text)
    if match:
        host, port_text = match.groups()
        if ":" not in host:
            raise BadInput(f"--http {shown(text)}: brackets hold an IPv6 address, {_EXAMPLE}")
    elif text.startswith("["):
        raise BadInput(f"--http {shown(text)}: expected [IPV6]:PORT, {_EXAMPLE}")
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise BadInput(f"--http {shown(text)}: expected HOST:PORT, {_EXAMPLE}")
        if ":" in host:
            raise BadInput(f"--http {shown(text)}: an IPv6 address goes in brackets, {_EXAMPLE}")
    if not host:
        raise BadInput(f"--http {shown(text)}: the host is missing, {_EXAMPLE}")
    if not port_text.isascii() or not port_text.isdigit() or int(port_text) > 65535:
        raise BadInput(f"--http {shown(text)}: the port must be a number from 0 to 65535")
    ip, numeric = _resolve(host, text)
    if not (ip.is_loopback or allow_remote):
        raise BadInput(
            f"--http {shown(text)}: {ip} is not a loopback address (127.0.0.0/8, ::1); anyone "
            "who can reach it could use this server. Add --allow-remote to serve it anyway"
        )
    names = [] if numeric else [host.lower()]  # a name the user chose to serve under
    names += [allowed_host_name(extra) for extra in allow_hosts]
    return HttpAddress(ip=ip, port=int(port_text), names=tuple(dict.fromkeys(names)))


def http_options(
    http: str | None,
    *,
    token_file: Path | None = None,
    allow_hosts: Sequence[str] = (),
    allow_remote: bool = False,
) -> tuple[HttpAddress | None, str | None]:
    """A server command's ``--http``, ``--token-file``, ``--allow-host`` and ``--allow-remote``
    checked together: the address (None: stdio) and the token read from ``token_file`` (None:
    make one). The last three apply to ``--http`` only; BadInput names the first wrong one."""
    address = None
    if http is not None:
        address = parse_http_address(
            http, allow_remote=allow_remote, allow_hosts=tuple(allow_hosts)
        )
    else:
        for option, given in (("--token-file", token_file), ("--allow-host", allow_hosts),
                              ("--allow-remote", allow_remote)):  # fmt: skip
            if given:
                raise BadInput(f"{option} applies to --http; without --http the server uses stdio")
    token = read_token_file(token_file) if token_file is not None else None
    return address, token


def allowed_host_name(text: str) -> str:
    """An ``--allow-host`` value as it appears in a Host header (without the port)."""
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        if not _HOST_NAME.fullmatch(text):
            raise BadInput(
                f"--allow-host {shown(text)}: expected a host name or an IP address, without "
                "port or scheme (e.g. --allow-host myhost.lan)"
            ) from None
        return text.lower()
    return f"[{ip}]" if ip.version == 6 else str(ip)


def _resolve(host: str, text: str) -> tuple[IPAddress, bool]:
    """The address to bind for ``host``, and whether ``host`` was numeric (``127.1`` is: it
    names 127.0.0.1 in the inet_aton spelling, and only the canonical spelling is a Host)."""
    try:
        return ipaddress.ip_address(host), True
    except ValueError:
        pass
    for numeric, flags in ((True, socket.AI_NUMERICHOST), (False, 0)):
        try:
            found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=flags)
        except (socket.gaierror, UnicodeError):
            continue
        # A name with both families (localhost): IPv4 first, as most clients try it first.
        found.sort(key=lambda entry: entry[0] != socket.AF_INET)
        return ipaddress.ip_address(found[0][4][0]), numeric
    raise BadInput(f"--http {shown(text)}: cannot resolve {shown(host)} to an address")


def listen(address: HttpAddress) -> socket.socket:
    """A socket bound to ``address`` and listening. Bound before the server starts, so that
    port 0 works and a client that reads the printed address can connect at once (the backlog
    holds it until the server accepts). IPPROTO_TCP explicitly: with protocol 0 asyncio leaves
    TCP_NODELAY off and every answer waits ~40 ms for an ACK."""
    sock = socket.socket(address.family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if address.family == socket.AF_INET6 and address.ip.is_unspecified:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((str(address.ip), address.port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        where = f"{address.url_host()}:{address.port}"
        raise BadInput(f"--http: cannot listen on {where}: {error.strerror or error}") from None
    return sock


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one fixed token, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token holder's identity when ``token`` is the one, else None (then 401)."""
        from mcp.server.auth.provider import AccessToken

        # Header values arrive decoded as latin-1; bytes make compare_digest accept any of them.
        if not hmac.compare_digest(token.encode("utf-8", "surrogateescape"), self._expected):
            return None
        # The token itself is not kept in the request's state.
        return AccessToken(token="(static token)", client_id="loopkit-token", scopes=[])

    def auth_settings(self, url: str) -> AuthSettings:
        """Settings that turn the SDK's bearer middleware on for this server (``url`` is its
        own address: the server issues its token itself; no OAuth routes are added)."""
        from mcp.server.auth.settings import AuthSettings

        return AuthSettings(issuer_url=url, resource_server_url=None)  # type: ignore[arg-type]


def read_token_file(path: Path) -> str:
    """The token in ``--token-file``: a private (0600), non-empty file of visible ASCII of at
    least 16 characters; BadInput otherwise."""
    where = f"--token-file {shown(path)}"
    try:
        info = path.stat()
    except FileNotFoundError:
        raise BadInput(f"{where}: no such file (expected a file holding the token)") from None
    except OSError as error:
        raise BadInput(f"{where}: cannot read it ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{where}: not a regular file (expected a file holding the token)")
    if sys.platform != "win32":
        if info.st_mode & 0o077:
            raise BadInput(
                f"{where}: others can open it (mode {stat.S_IMODE(info.st_mode):04o}); "
                "expected a file only its owner can read: chmod 600"
            )
        if info.st_uid != os.geteuid():
            raise BadInput(f"{where}: owned by another user (uid {info.st_uid}); expected yours")
    if info.st_size > MAX_TOKEN_BYTES:
        raise BadInput(f"{where}: {info.st_size} bytes; expected a token, not a large file")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise BadInput(f"{where}: cannot read it ({error.strerror})") from None
    token = raw.strip(b" \t\r\n")
    if not token:
        raise BadInput(f"{where}: the file is empty; expected a token (e.g. 32 random bytes)")
    text = token.decode("latin-1")
    if not _TOKEN_CHARS.fullmatch(text):
        raise BadInput(f"{where}: expected one token of visible ASCII characters, no spaces")
    if len(text) < MIN_TOKEN_CHARS:
        raise BadInput(f"{where}: the token has {len(text)} characters; expected 16 or more")
    return text


@dataclass
class TokenFile:
    """A token the server made for this run, in a new 0700 folder (under ``$XDG_RUNTIME_DIR``
    when that is a private folder of ours, else the temp folder) as a 0600 file ``token``.
    :meth:`remove` deletes both at exit."""

    token: str
    path: Path

    @classmethod
    def create(cls) -> TokenFile:
        """Generate a token and write its file."""
        folder = Path(tempfile.mkdtemp(prefix="loopkit-token-", dir=_runtime_dir()))
        path = create_private_file(folder / "token")
        token = secrets.token_urlsafe(32)
        path.write_text(token + "\n", encoding="ascii")
        return cls(token=token, path=path)

    def remove(self) -> None:
        """Delete the token file and its folder."""
        shutil.rmtree(self.path.parent, ignore_errors=True)


def _runtime_dir() -> str | None:
    folder = os.environ.get("XDG_RUNTIME_DIR")
    if not folder or sys.platform == "win32":
        return None
    try:
        info = os.stat(folder)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077
    return folder if private and info.st_uid == os.geteuid() else None
