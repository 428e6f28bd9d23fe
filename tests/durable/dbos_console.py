"""DBOS logs to the ``sys.stderr`` it saw when it first started in the process. Where pytest runs
more than once in one process (mutmut does: a clean run, then one per mutant), that first stream
is an earlier session's capture file, closed since, and every later ``DBOS(...)`` fails on it
("I/O operation on closed file"). The fixture points DBOS's console handler at today's stderr."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def dbos_console_on_current_stderr() -> Iterator[None]:
    for handler in logging.getLogger("dbos").handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(
            handler, logging.FileHandler
        ):
            stream = getattr(handler, "stream", None)
            if stream is None or getattr(stream, "closed", False):
                handler.stream = sys.stderr  # not setStream: it flushes the closed one first
    yield
