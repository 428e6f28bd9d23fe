"""Finding the processes a test started, by a marker in their environment (Linux /proc).

Several copies of the suite may run at once on one machine (pytest-xdist workers, a second clone):
a marker must be unique to one test *run*, not only to one test, so make it with
:func:`unique_marker` (a random token), never from ``tmp_path.name`` (``test_x0`` in every copy).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


class Marker(str):
    """``NAME=value``, an environment entry made by :func:`unique_marker`."""

    @property
    def name(self) -> str:
        return self.split("=", 1)[0]

    @property
    def value(self) -> str:
        return self.split("=", 1)[1]


def unique_marker(name: str) -> Marker:
    """``NAME=<random token>``: an environment entry no other process on the machine carries
    (put ``{marker.name: marker.value}`` in the environment of what the test starts)."""
    if not name or "=" in name or "\0" in name:
        raise ValueError(f"marker name {name!r}: expected a variable name without '=' or NUL")
    return Marker(f"{name}={secrets.token_hex(8)}")


def processes_with(marker: Marker) -> list[int]:
    """The pids whose environment holds exactly the entry ``marker``.

    The whole entry must match: ``NAME=ab`` is not found in a process whose entry is
    ``NAME=abc`` (a substring search would match another run's longer value). Only a
    :class:`Marker` is accepted, so a test cannot look for a value another copy of the suite
    also uses (``tmp_path.name`` is ``test_x0`` in every copy).
    """
    if not isinstance(marker, Marker):
        raise TypeError(
            f"marker {marker!r}: make it with tests.processes.unique_marker(NAME), so that no "
            "process of another test run carries it"
        )
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
