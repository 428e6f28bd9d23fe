"""What the project's test command installs must be there when it runs.

``scripts/test.sh`` and ``nox -s tests`` set ``LOOPKIT_REQUIRE_DESKTOP=1`` on Linux after
``scripts/setup.sh --tests`` installed everything (the headless desktop, rsyslog, PyGObject,
PostgreSQL, ffmpeg, the outside MCP client, the dev extra). Under it a missing piece fails the
tests that need it; without it (a quick run on a machine that lacks the desktop) those tests
are skipped and say why.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REQUIRE_ENV = "LOOPKIT_REQUIRE_DESKTOP"


def required() -> bool:
    """True when the test command promises a complete install (``LOOPKIT_REQUIRE_DESKTOP``)."""
    return bool(os.environ.get(REQUIRE_ENV))


def unavailable(reason: str) -> NoReturn:
    """Fail (complete install promised) or skip (quick run) because ``reason``.

    Works inside a test or fixture and at a test module's top level (the whole module is then
    skipped, or fails to collect).
    """
    if required():
        pytest.fail(
            f"{REQUIRE_ENV} is set but {reason}; run scripts/setup.sh --tests", pytrace=False
        )
    pytest.skip(reason, allow_module_level=True)


def import_or_unavailable(name: str, *, install: str) -> ModuleType:
    """``import name``; when it is missing, :func:`unavailable` names what installs it."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        unavailable(f"{name} cannot be imported ({error}); it comes with {install}")


def postgresql_bindir() -> Path:
    """The folder of PostgreSQL's server programs (``initdb``, ``pg_ctl``): Debian's newest
    ``/usr/lib/postgresql/N/bin``, else the ones on PATH; :func:`unavailable` when missing."""
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if debian:
        return debian[-1].parent
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    unavailable(
        "PostgreSQL's server programs (initdb, pg_ctl) are not installed; they come with "
        "the Debian package postgresql (scripts/setup.sh --tests installs it)"
    )


def ffmpeg_or_unavailable() -> str:
    """The path of ``ffmpeg`` (video recording); :func:`unavailable` when it is missing."""
    found = shutil.which("ffmpeg")
    if found is None:
        unavailable(
            "ffmpeg is not installed; video recording needs it (the Debian package ffmpeg: "
            "scripts/setup.sh --tests installs it)"
        )
    return found


def chromium_or_unavailable() -> Path:
    """Debian's chromium, which Playwright drives (its own browser download is not used);
    :func:`unavailable` when it is missing."""
    found = Path("/usr/bin/chromium")
    if not found.exists():
        unavailable(
            "Debian's chromium is not installed (/usr/bin/chromium); the board's browser "
            "tests drive it (scripts/setup.sh --tests installs it)"
        )
    return found
