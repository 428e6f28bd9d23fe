"""``python -m loopkit_board``: serve the board on 127.0.0.1.

    python -m loopkit_board --cards CARDS_DIR --accounts accounts.toml [--port 8750]
    python -m loopkit_board hash-password        # reads a password (or token), prints its hash

Runs go on the durable queue; start workers with ``python -m loopkit.worker`` (same database:
``--config``/``--database`` as theirs). A non-loopback ``--host`` needs ``--allow-remote``.
Every setting is checked before the port is bound (bad input: one line, exit status 2, nothing
listening and nothing created). SIGINT, SIGTERM or SIGHUP stop it: exit status 130, as every
loopkit command (docs/security.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import ipaddress
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.command_line import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    OneLineParser,
    positive_int,
)

if TYPE_CHECKING:
    from loopkit.cards.config import RunnerConfig
    from loopkit_board.auth import Accounts

DEFAULT_PORT = 8750


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m loopkit_board",
        description="A Kanban board over card files: start runs, watch them live, chat about them.",
    )
    parser.add_argument("--cards", type=Path, default=Path("cards"), help="the card folder")
    parser.add_argument(
        "--accounts",
        type=Path,
        default=os.environ.get("LOOPKIT_BOARD_ACCOUNTS"),
        help="TOML file: [accounts] name = argon2 hash, [tokens] name = argon2 hash "
        "(env LOOPKIT_BOARD_ACCOUNTS)",
    )
    parser.add_argument("--config", type=Path, help="the runs' TOML config (model, database)")
    parser.add_argument("--database", help="the durable runs' database (as the workers')")
    parser.add_argument("--data-dir", type=Path, help="chats and the cookie key (default: runs)")
    parser.add_argument(
        "--chat-model", default="offline", help="model for the chat (default: offline answers)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument(
        "--tracing-url",
        default=os.environ.get("LOOPKIT_TRACING_URL"),
        help="link each run to its trace: a trace viewer's URL with {trace_id} in it "
        "(env LOOPKIT_TRACING_URL; docs/observability.md)",
    )
    parser.add_argument(
        "--max-streams",
        type=positive_int,
        default=200,
        help="live run streams open at once, in all (default 200)",
    )
    parser.add_argument(
        "--max-streams-per-login",
        type=positive_int,
        default=16,
        help="live run streams open at once for one login (default 16)",
    )
    return parser.parse_args(argv)


def _hash_password() -> int:
    from loopkit_board.auth import hash_secret

    typed = getpass.getpass("password or token: ") if sys.stdin.isatty() else sys.stdin.readline()
    typed = typed.rstrip("\n")
    if not typed:
        print("error: empty password", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(hash_secret(typed))
    return EXIT_OK


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hash-password"]:
        return _hash_password()
    args = parse_args(argv)
    try:
        ip = ipaddress.ip_address(args.host)
    except ValueError:
        return _error(f"--host {args.host!r}: expected an IP address (127.0.0.1, ::1, ...)")
    if not ip.is_loopback and not args.allow_remote:
        return _error(
            f"--host {args.host}: not a loopback address; the board would be reachable from "
            "other machines. Add --allow-remote to mean it (and put TLS in front)."
        )
    if not 0 <= args.port <= 65535:
        return _error(f"--port {args.port}: expected 0 to 65535")
    if args.accounts is None:
        return _error(
            '--accounts FILE is needed (nobody could log in): [accounts] name = "<hash>"; '
            "make a hash with: python -m loopkit_board hash-password"
        )
    if not args.cards.is_dir():
        return _error(f"--cards {args.cards}: not a folder of card files")
    url = args.tracing_url
    if url is not None and not (url.startswith(("http://", "https://")) and "{trace_id}" in url):
        return _error(
            f"--tracing-url {url!r}: expected a trace viewer's http(s) URL with {{trace_id}} in it"
        )
    from loopkit.cards import ConfigError, load_config
    from loopkit.demo.run import check_durable
    from loopkit_board.auth import AuthConfigError, load_accounts
    from loopkit_board.settings import check_service_settings

    try:
        accounts = load_accounts(args.accounts)
        config = load_config(args.config, database_url=args.database)
        check_durable(config)
        check_service_settings(config, args.data_dir)
    except (AuthConfigError, ConfigError) as e:
        return _error(str(e))
    return asyncio.run(serve(args, config, accounts, ip))


async def serve(
    args: argparse.Namespace,
    config: RunnerConfig,
    accounts: Accounts,
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> int:
    """Serve the board until stopped (SIGINT, SIGTERM, SIGHUP: exit status 130)."""
    import uvicorn

    from loopkit_board.app import create_app
    from loopkit_board.limits import StreamSlots
    from loopkit_board.service import BoardService

    service = BoardService(
        args.cards,
        config=config,
        data_dir=args.data_dir,
        chat_model=args.chat_model,
        tracing_url=args.tracing_url,
    )
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    allowed = [host] + (["localhost"] if ip.is_loopback else [])
    try:  # the cookie key is read or made here: before anything listens
        streams = StreamSlots(per_login=args.max_streams_per_login, total=args.max_streams)
        app = create_app(service, accounts, allowed_hosts=allowed, streams=streams)
    except OSError as e:
        return _error(f"data folder {service.data_dir}: {e.strerror or e}")
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((str(ip), args.port))
    except OSError as e:
        sock.close()
        return _error(f"cannot listen on {ip}:{args.port}: {e.strerror or e}")
    port = sock.getsockname()[1]
    server = _server_class()(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    )
    print(f"board on http://{host}:{port}/ (cards: {args.cards})", flush=True)
    await server.serve(sockets=[sock])
    return EXIT_INTERRUPTED if server.stopped_by else EXIT_OK


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopped by SIGINT, SIGTERM or SIGHUP without raising the signal
        again afterwards (uvicorn does, which ends the process with -15 instead of 130)."""

        stopped_by: int | None = None

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            stops = [signal.SIGINT, signal.SIGTERM, *[getattr(signal, "SIGHUP", signal.SIGTERM)]]
            before = {sig: signal.signal(sig, self._stop) for sig in dict.fromkeys(stops)}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

        def _stop(self, sig: int, frame: object) -> None:
            self.stopped_by = sig
            if self.should_exit:
                self.force_exit = True  # a second signal: stop now
            self.should_exit = True

    return Server


if __name__ == "__main__":
    sys.exit(main())
