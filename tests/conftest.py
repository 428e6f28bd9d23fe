"""Shared test configuration."""

from __future__ import annotations

import os

# One headless desktop (Xvfb + D-Bus + AT-SPI) for the whole session: the `headless_desktop`
# fixture, shared by the UI, script-runner and demo tests.
pytest_plugins = ["loopkit_ui.testing"]

# litellm must never try the network from tests (DESIGN.md: it fetches a price list otherwise).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


def pytest_sessionstart(session: object) -> None:
    """With LOOPKIT_REQUIRE_DESKTOP set (scripts/test.sh sets it on Linux), a machine without the
    headless desktop is an error, never a reason to skip the UI tests quietly."""
    if not os.environ.get("LOOPKIT_REQUIRE_DESKTOP"):
        return
    from loopkit_ui.testing import desktop_available

    reason = desktop_available()
    if reason:
        import pytest

        raise pytest.UsageError(
            f"LOOPKIT_REQUIRE_DESKTOP is set but the headless desktop cannot start: {reason}. "
            "Run scripts/setup.sh (it installs Xvfb, D-Bus and AT-SPI)."
        )
