"""Fixtures for the MCP client tests: the test server over streamable HTTP in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from .helpers import SERVER_SCRIPT


@dataclass
class HttpServer:
    """The test server under uvicorn on 127.0.0.1, in a subprocess."""

    process: subprocess.Popen[str]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """Start the server; it binds port 0 itself and prints ``PORT <n>`` (no free-port race)."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    stdout = process.stdout
    assert stdout is not None
    try:
        first_line: list[str] = []
        reader = threading.Thread(target=lambda: first_line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=30)
        if not first_line or not first_line[0].startswith("PORT "):
            pytest.fail(f"HTTP test server did not print its port: {first_line!r}")
        yield HttpServer(process, int(first_line[0].split()[1]))
    finally:
        process.kill()
        process.wait(timeout=10)
        stdout.close()
