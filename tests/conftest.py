"""Shared test configuration.

The suite runs in parallel processes (pytest-xdist; ``scripts/test.sh`` and ``nox -s tests`` pass
``-n`` and ``--dist loadgroup``, see docs/testing.md). Each worker is a separate process with its
own session fixtures: its own headless desktop (Xvfb picks a free display itself), its own private
PostgreSQL cluster and rsyslogd in its own temp folders. Tests take free ports from the kernel
(port 0), never fixed ones, and find their processes by markers unique to the run
(``tests/processes.py``), so a second copy of the suite can run at the same time.
"""

from __future__ import annotations

import os

import pytest

# One headless desktop (Xvfb + D-Bus + AT-SPI) per test process: the `headless_desktop` fixture,
# shared by the UI, script-runner and demo tests. tests/xdist_groups.py makes --dist loadgroup
# keep each xdist_group on one worker.
pytest_plugins = ["loopkit_ui.testing", "tests.xdist_groups"]

# litellm must never try the network from tests (DESIGN.md: it fetches a price list otherwise).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

#: Markers of tests that take seconds (real processes, the desktop) rather than milliseconds.
_HEAVY_MARKERS = ("slow", "ui", "integration")


def pytest_sessionstart(session: object) -> None:
    """With LOOPKIT_REQUIRE_DESKTOP set (scripts/test.sh sets it on Linux), a machine without the
    headless desktop is an error, never a reason to skip the UI tests quietly."""
    if not os.environ.get("LOOPKIT_REQUIRE_DESKTOP"):
        return
    from loopkit_ui.testing import desktop_available

    reason = desktop_available()
    if reason:
        raise pytest.UsageError(
            f"LOOPKIT_REQUIRE_DESKTOP is set but the headless desktop cannot start: {reason}. "
            "Run scripts/setup.sh (it installs Xvfb, D-Bus and AT-SPI)."
        )


@pytest.hookimpl(tryfirst=True)  # before the workers report the xdist_group marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order and group the tests for parallel workers (harmless in a serial run).

    - A test that uses a module-, package- or class-scoped fixture (a UI server on the invoice
      app, a PostgreSQL cluster for one module) joins its module's ``xdist_group``: under
      ``--dist loadgroup`` one worker runs the whole module, so that fixture starts once. Every
      other test is scheduled on its own, wherever a worker is free.
    - Heavy tests first (``slow``, then ``ui``, then ``integration``), the millisecond ones last,
      so they fill the gaps at the end instead of one long test starting when the others are
      done (the scheduler keeps this order with ``--no-loadscope-reorder``).
    """
    for item in items:
        if _uses_a_wider_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    items.sort(key=_weight)  # stable: the collection order within each weight


def _uses_a_wider_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture that outlives one test but not the session."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs and defs[-1].scope in ("class", "module", "package")
        for defs in info.name2fixturedefs.values()
    )


def _weight(item: pytest.Item) -> int:
    for rank, name in enumerate(_HEAVY_MARKERS):
        if item.get_closest_marker(name) is not None:
            return rank
    return len(_HEAVY_MARKERS)
