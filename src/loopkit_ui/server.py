"""The UI-automation MCP server (official ``mcp`` SDK 2.x): stdio or streamable HTTP.

    python -m loopkit_ui.server --app-name invoice_app            # stdio
    python -m loopkit_ui.server --app-name invoice_app --http 127.0.0.1:8765
    python -m loopkit_ui.server --launch "python -m invoice_app"   # start the app itself

The server attaches to the application lazily, on each call if needed (so the app may start
later or restart after a rebuild). Trees and screenshots go to private files (folders 0700,
files 0600); answers carry the path.

Over HTTP every request needs a bearer token: the server writes a new one to a private file and
prints that file's path (never the token), or reads yours with --token-file. Host and Origin
must name the bound address (DNS rebinding is refused); a non-loopback address needs
--allow-remote.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit_ui.cli_input import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    BadInput,
    Interrupted,
    OneLineParser,
    check_launch,
    check_output_dir,
    check_pid,
    finish,
    interrupt_on_signals,
    loop_interrupts_on_signals,
    non_negative_seconds,
    positive_seconds,
    shown,
)
from loopkit_ui.http_security import HttpAddress, TokenFile, http_options, listen
from loopkit_ui.private_files import make_private_dir

if TYPE_CHECKING:
    from loopkit_ui.server_tools import TIMINGS, build_server
    from loopkit_ui.service import UIService

__all__ = ["TIMINGS", "build_server", "main"]

PROG = "python -m loopkit_ui.server"


def __getattr__(name: str) -> Any:
    # The tools (and the mcp SDK under them) load on first use: the command line answers bad
    # input before paying for that import.
    if name in ("TIMINGS", "build_server"):
        from loopkit_ui import server_tools

        return getattr(server_tools, name)
    raise AttributeError(f"module 'loopkit_ui.server' has no attribute {name!r}")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description=__doc__,
        epilog="exit status: 0 stopped normally (stdin closed), 1 failed (an unexpected "
        "error), 2 bad input (one line on stderr; nothing was started or created), 130 "
        "interrupted (Ctrl+C, SIGTERM, SIGHUP; a launched app is ended)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp, not stdio; IPv6 as [::1]:PORT; "
        "port 0 picks a free one (the first line printed is the URL)",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="with --http: read the bearer token from this file (yours, mode 0600, 16+ "
        "visible ASCII characters); default: a new token in a private file whose path is "
        "printed (second line), removed at exit",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --http: allow a non-loopback address (0.0.0.0, ::, a LAN address). The "
        "token still applies, but plain HTTP crosses the network unencrypted",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="with --http: also accept this Host name (e.g. the machine's name behind "
        "--allow-remote); repeatable. Default: the bound address, and localhost, 127.0.0.1 "
        "and [::1] on loopback",
    )
    parser.add_argument(
        "--backend", choices=["atspi", "uia"], help="default: LOOPKIT_UI_BACKEND, else by platform"
    )
    parser.add_argument(
        "--app-name",
        default=os.environ.get("LOOPKIT_UI_APP"),
        help="attach to this app: accessible name or a word of its command line "
        "(env LOOPKIT_UI_APP)",
    )
    parser.add_argument("--pid", type=int, default=None, help="attach to this process id")
    parser.add_argument(
        "--launch",
        metavar="COMMAND",
        help="start the app (shell-quoted command) "
        "and attach to it; it is ended when the server exits",
    )
    parser.add_argument("--launch-cwd", help="working directory for --launch")
    parser.add_argument(
        "--launchable",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="an app ui_launch_app may start by NAME (shell-quoted COMMAND); repeatable. "
        "Nothing else can be launched through the tools",
    )
    parser.add_argument(
        "--snapshots",
        choices=["incremental", "full", "none"],
        default="incremental",
        help="what every action's answer carries of the tree: what changed since the last look, "
        "with refs (incremental, the default), the whole outline (full) or nothing (none)",
    )
    parser.add_argument(
        "--screenshot-images",
        action="store_true",
        help="ui_screenshot answers the PNG as image content too (per call: image=true/false)",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=os.environ.get("LOOPKIT_UI_OUTPUT_DIR") or None,
        help="folder for trees and screenshots (env LOOPKIT_UI_OUTPUT_DIR); created 0700, "
        "files 0600; default: a new private temp folder",
    )
    parser.add_argument(
        "--timeout", type=positive_seconds, default=20.0, help="seconds per call (20)"
    )
    parser.add_argument(
        "--attach-timeout",
        type=non_negative_seconds,
        default=3.0,
        help="seconds a call waits for the application to appear before failing (3)",
    )
    return parser


def _check(args: argparse.Namespace) -> tuple[HttpAddress | None, str | None, list[str] | None]:
    """Every input checked before anything starts: the address, the token file, the app to
    attach to or launch, the output folder. BadInput names the first wrong one."""
    address, token = http_options(
        args.http,
        token_file=args.token_file,
        allow_hosts=args.allow_host,
        allow_remote=args.allow_remote,
    )
    if args.pid is not None:
        check_pid(args.pid)
    launch = check_launch(args.launch, args.launch_cwd) if args.launch is not None else None
    args.launchables = _launchables(args.launchable, args.launch_cwd)
    if args.launch_cwd is not None and launch is None and not args.launchables:
        raise BadInput(
            f"--launch-cwd {shown(args.launch_cwd)} applies to --launch and --launchable only"
        )
    _check_backend(args.backend)
    if args.output_dir is not None:
        check_output_dir(args.output_dir, "--output-dir")
    return address, token, launch


def _launchables(given: list[str], cwd: str | None) -> dict[str, list[str]]:
    """``NAME=COMMAND`` options as a mapping; each command checked as ``--launch`` is."""
    found: dict[str, list[str]] = {}
    for item in given:
        name, sep, command = item.partition("=")
        name = name.strip()
        if not sep or not name or not command.strip():
            raise BadInput(f"--launchable {shown(item)}: expected NAME=COMMAND")
        if name in found:
            raise BadInput(f"--launchable: the name {shown(name)} is given twice")
        try:
            found[name] = check_launch(command, cwd)
        except BadInput as error:
            raise BadInput(f"--launchable {shown(name)}: {error}") from None
    return found


def _check_backend(name: str | None) -> None:
    from loopkit_ui.backends import default_backend_name
    from loopkit_ui.backends.protocol import UIError

    try:
        chosen = name or default_backend_name()
    except UIError as error:
        raise BadInput(str(error)) from None
    needs = {"atspi": "linux", "uia": "win32"}[chosen]
    if not sys.platform.startswith(needs):
        where = "Windows (UI Automation)" if chosen == "uia" else "Linux (AT-SPI over D-Bus)"
        raise BadInput(f"--backend {chosen}: this backend needs {where}")


def _listen(address: HttpAddress) -> socket.socket:
    return listen(address)


def _serve_http(
    service: UIService, sock: socket.socket, address: HttpAddress, token: str, note: str
) -> None:
    from loopkit.mcp.http_serving import serve_http
    from loopkit_ui.server_tools import build_server

    serve_http(
        lambda auth, verifier: build_server(service, auth=auth, token_verifier=verifier),
        sock,
        address,
        token,
        note,
        label="loopkit-ui",
    )


def _serve_stdio(service: UIService) -> None:
    import anyio

    from loopkit_ui.server_tools import build_server

    server = build_server(service)

    async def serve() -> None:
        with loop_interrupts_on_signals():
            await server.run_stdio_async()

    anyio.run(serve)


def _service(args: argparse.Namespace, launch: list[str] | None) -> UIService:
    import signal as signals

    from loopkit_ui.backends.protocol import UIError

    # The desktop's own helper: SIGTERM to the child when this (main) thread's process dies.
    from loopkit_ui.headless_desktop import _pdeathsig as parent_death_signal
    from loopkit_ui.service import UIService

    try:
        return UIService(
            backend_name=args.backend,
            app_name=args.app_name,
            pid=args.pid,
            output_dir=args.output_dir,
            call_timeout=args.timeout,
            launch=launch,
            launch_cwd=args.launch_cwd,
            attach_timeout=args.attach_timeout,
            display=os.environ.get("DISPLAY"),
            # A recording (ffmpeg) ends with the server even when the server is killed.
            recorder_preexec=parent_death_signal(signals.SIGTERM),
            snapshots=args.snapshots,
            screenshot_images=args.screenshot_images,
            launchable=args.launchables,
        )
    except OSError as error:
        what = f"--launch {shown(args.launch)}" if launch else "the server"
        raise BadInput(f"{what}: cannot start: {error.strerror or error}") from None
    except UIError as error:
        raise BadInput(str(error)) from None


def _run(args: argparse.Namespace) -> int:
    address, token, launch = _check(args)
    sock = _listen(address) if address is not None else None
    made: TokenFile | None = None
    note = ""
    try:
        if args.output_dir is not None:
            try:
                make_private_dir(args.output_dir)
            except OSError as error:
                raise BadInput(
                    f"--output-dir {shown(args.output_dir)}: cannot create the folder "
                    f"({error.strerror or error})"
                ) from None
        if sock is not None and address is not None:
            if token is None:
                made = TokenFile.create()
                token = made.token
                note = f"bearer token in {made.path} (send: Authorization: Bearer <its content>)"
            else:
                note = f"bearer token from {args.token_file}"
        service = _service(args, launch)
        # The accessibility bus connection is made while the MCP SDK loads (a thread: the
        # first tool call then finds it made; the backend's lock orders the two).
        threading.Thread(target=service.warm_up, name="warm up", daemon=True).start()
        try:
            if sock is not None and address is not None and token is not None:
                _serve_http(service, sock, address, token, note)
            else:
                _serve_stdio(service)
        finally:
            service.close()
    finally:
        if sock is not None:
            sock.close()
        if made is not None:
            made.remove()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status (see ``--help``)."""
    args = _parser().parse_args(argv)
    try:
        with interrupt_on_signals():
            return _run(args)
    except BadInput as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (Interrupted, KeyboardInterrupt):
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    # A name that is not valid UTF-8 is printed escaped instead of ending in a traceback.
    with contextlib.suppress(AttributeError):
        sys.stderr.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    finish(main())
