"""Helpers of the board's browser tests: Debian's chromium under Playwright, logging in, and
axe-core's WCAG 2.1 AA checks on a page (npm ``axe-core`` from ``tests/board/axe``, installed by
``scripts/setup.sh --tests``, injected into the page)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.board.helpers import PASSWORD

CHROMIUM = Path("/usr/bin/chromium")
AXE = Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
#: axe-core's rules of WCAG 2.0 and 2.1, levels A and AA.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def need_axe() -> None:
    """Skip without axe-core (fail instead under LOOPKIT_REQUIRE_DESKTOP=1: CI has it)."""
    if not AXE.is_file():
        message = "axe-core is not installed: bash scripts/setup.sh --tests"
        if os.environ.get("LOOPKIT_REQUIRE_DESKTOP") == "1":
            pytest.fail(message)
        pytest.skip(message)


def log_in(page: Any, url: str) -> None:
    page.goto(url + "/login")
    page.fill("input[name=name]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("#login")
    page.wait_for_selector("h1")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.1 AA violations on the page as it is now (rule id, impact, the
    elements)."""
    need_axe()
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    result = page.evaluate(
        "async (tags) => { const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary)})); }",
        WCAG_AA,
    )
    return list(result)


def assert_accessible(page: Any, what: str) -> None:
    """No WCAG 2.1 AA violation on the page (the violations in the message when there are)."""
    found = axe_violations(page)
    assert not found, f"{what}: axe-core found {len(found)} violations:\n" + json.dumps(
        found, indent=1
    )
