"""Fixtures for the demo tests: one headless desktop for the acceptance checks."""

from loopkit_ui.testing import headless_desktop  # noqa: F401  (a fixture)
