"""What the project's test command installs must be there when it runs.

``scripts/test.sh`` and ``nox -s tests`` set ``LOOPKIT_REQUIRE_DESKTOP=1`` on Linux after
``scripts/setup.sh`` installed everything (the headless desktop, rsyslog, PyGObject, the dev
extra). Under it a missing piece fails the tests that need it; without it (a quick run on a
machine that lacks the desktop) those tests are skipped and say why.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

REQUIRE_ENV = "LOOPKIT_REQUIRE_DESKTOP"


def required() -> bool:
    """True when the test command promises a complete install (``LOOPKIT_REQUIRE_DESKTOP``)."""
    return bool(os.environ.get(REQUIRE_ENV))


def unavailable(reason: str) -> NoReturn:
    """Fail (complete install promised) or skip (quick run) because ``reason``."""
    if required():
        pytest.fail(f"{REQUIRE_ENV} is set but {reason}; run scripts/setup.sh", pytrace=False)
    pytest.skip(reason)


def import_or_unavailable(name: str, *, install: str) -> ModuleType:
    """``import name``; when it is missing, :func:`unavailable` names what installs it."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        unavailable(f"{name} cannot be imported ({error}); it comes with {install}")
