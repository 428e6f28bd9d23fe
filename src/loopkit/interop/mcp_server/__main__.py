"""``python -m loopkit.interop.mcp_server MODULE:AGENT``: an agent as an MCP tool, over stdio
(the default) or streamable HTTP (``--http HOST:PORT``).

``MODULE:AGENT`` names an :class:`~loopkit.agents.Agent` (or a function without arguments that
returns one) in an importable module (the current folder is on the path), e.g.
``myapp.agents:support``. Over HTTP the rules are the UI server's (docs/ui-server.md, over
HTTP): every request needs the bearer token, which the server writes to a new private file
(its path is printed, never the token) or reads from yours (``--token-file``); Host and Origin
must name the bound address; a non-loopback address needs ``--allow-remote``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit.command_line import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    BadInput,
    OneLineParser,
    shown,
)

PROG = "python -m loopkit.interop.mcp_server"


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 stopped normally, 1 failed, 2 bad input (one line on stderr; "
        "nothing was started), 130 interrupted",
    )
    parser.add_argument("agent", metavar="MODULE:AGENT", help="the agent to serve")
    parser.add_argument("--tool-name", help="the tool's name (default: the agent's name)")
    parser.add_argument(
        "--input-type",
        metavar="MODULE:MODEL",
        help="a pydantic model whose fields are the tool's input (default: one 'prompt' string)",
    )
    parser.add_argument(
        "--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp"
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        help="with --http: read the bearer token from this file (yours, mode 0600, 16+ visible "
        "ASCII characters); default: a new token in a private file whose path is printed",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --http: allow a non-loopback address (the token still applies; plain HTTP)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="with --http: also accept this Host name (repeatable)",
    )
    return parser


def _load(spec: str, what: str) -> Any:
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise BadInput(f"{what} {shown(spec)}: expected MODULE:NAME, e.g. myapp.agents:support")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # the current folder, as `python -m` and `python script.py` do
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise BadInput(f"{what} {shown(spec)}: cannot import {module_name}: {e}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise BadInput(f"{what} {shown(spec)}: {module_name} has no {attribute!r}") from None


def _agent(spec: str) -> Any:
    from loopkit.agents.agent import Agent

    found = _load(spec, "MODULE:AGENT")
    if not isinstance(found, Agent) and callable(found):
        found = found()
    if not isinstance(found, Agent):
        raise BadInput(
            f"MODULE:AGENT {shown(spec)}: expected a loopkit Agent (or a function returning "
            f"one), got {type(found).__name__}"
        )
    return found


def _run(args: argparse.Namespace) -> int:
    from loopkit.mcp.http_security import TokenFile, http_options, listen

    address, token = http_options(
        args.http,
        token_file=args.token_file,
        allow_hosts=args.allow_host,
        allow_remote=args.allow_remote,
    )
    agent = _agent(args.agent)
    input_type = _load(args.input_type, "--input-type") if args.input_type else None
    from loopkit.interop.mcp_server.server import agent_mcp_server

    def build(auth: Any = None, verifier: Any = None) -> Any:
        try:
            return agent_mcp_server(agent, tool_name=args.tool_name, input_type=input_type,
                                    auth=auth, token_verifier=verifier)  # fmt: skip
        except TypeError as e:
            raise BadInput(f"--input-type {shown(args.input_type)}: {e}") from None

    if address is None:
        import anyio

        server = build()
        anyio.run(server.run_stdio_async)
        return EXIT_OK
    build()  # bad input is reported before anything listens
    sock = listen(address)
    made = None
    try:
        if token is None:
            made = TokenFile.create()
            token = made.token
            note = f"bearer token in {made.path} (send: Authorization: Bearer <its content>)"
        else:
            note = f"bearer token from {args.token_file}"
        from loopkit.mcp.http_serving import serve_http

        serve_http(build, sock, address, token, note, label=f"loopkit agent {agent.name!r}")
    finally:
        sock.close()
        if made is not None:
            made.remove()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except BadInput as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
