"""A loopback port where nothing listens, held for the whole test.

"Bind port 0, read the number, close the socket" leaves the port free for anyone: another copy of
the suite (xdist workers, a second clone) may listen there before the test connects. A socket that
is bound but never listens keeps the port taken (no one else can listen on it) while every
connection to it is refused, which is what such a test needs.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


@contextlib.contextmanager
def closed_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A port on ``host`` that refuses connections and that no other process can take until
    the block ends."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind((host, 0))
        yield int(held.getsockname()[1])
