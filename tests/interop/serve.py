"""Serves an ASGI app for the interop tests: ``python -m tests.interop.serve MODULE:FACTORY
FOLDER`` calls ``FACTORY(FOLDER, URL)`` and serves the app on 127.0.0.1 at a free port, after
printing its URL on one line (the test reads it, then talks to the server)."""

from __future__ import annotations

import importlib
import socket
import sys

import uvicorn


def main() -> None:
    spec, folder = sys.argv[1], sys.argv[2]
    module, _, name = spec.partition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = getattr(importlib.import_module(module), name)(folder, url)
    print(url, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
