"""Finding the processes a test started, by a marker in their environment (Linux /proc).

Several copies of the suite may run at once on one machine (pytest-xdist workers, a second clone):
a marker must be unique to one test *run*, not only to one test, so make it with
:func:`unique_marker` (a random token), never from ``tmp_path.name`` (``test_x0`` in every copy).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def unique_marker(name: str) -> str:
    """``NAME=<random token>``: an environment entry no other process on the machine carries."""
    if not name or "=" in name or "\0" in name:
        raise ValueError(f"marker name {name!r}: expected a variable name without '=' or NUL")
    return f"{name}={secrets.token_hex(8)}"


def processes_with(marker: str) -> list[int]:
    """The pids whose environment holds exactly the entry ``marker`` (``NAME=value``).

    The whole entry must match: ``NAME=ab`` is not found in a process whose entry is
    ``NAME=abc`` (a substring search would match another run's longer value).
    """
    if "=" not in marker:
        raise ValueError(f"marker {marker!r}: expected NAME=value")
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                found.append(int(entry))
    return found
