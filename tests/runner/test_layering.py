"""Library and application live in separate folders, and the dependency points one way.

The library (``abstractions/``, ``middleware/``, ``providers/``, ``mcp/``, ``agents/``,
``sessions/``, ``run_context.py`` and the shared modules beside it) never imports the application
(``cards/``, ``demo/``); the card runner (``cards/``) never imports the demo. Only the top-level
``loopkit/__init__.py`` names a few card names, loaded on first use.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "loopkit"
# The card-runner application: its domain (cards/), the demo, and the two commands that queue and
# run cards (``python -m loopkit.runs``, ``python -m loopkit.worker``; named by the durable-runs
# issue, so they sit at the package root beside the library).
# The evals (``python -m loopkit.evals``) grade card runs through the demo's pipeline: application.
APPLICATION = ("cards", "demo", "evals", "runs.py", "worker.py")


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def library_files() -> list[Path]:
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).parts[0] not in APPLICATION and p != PACKAGE / "__init__.py"
    ]


def test_the_layout_has_both_sides() -> None:
    names = {p.relative_to(PACKAGE).parts[0] for p in library_files()}
    assert {"abstractions", "middleware", "providers", "mcp", "agents", "sessions"} <= names
    assert (PACKAGE / "cards" / "runner.py").is_file() and (PACKAGE / "demo").is_dir()
    # the card-runner domain moved into cards/: nothing of it is left at the package root
    for old in ("cards.py", "result.py", "runner.py", "config.py"):
        assert not (PACKAGE / old).exists(), old


@pytest.mark.parametrize("path", library_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_library_never_imports_the_application(path: Path) -> None:
    bad = {
        m
        for m in imported_modules(path)
        if m.split(".")[:2] in (["loopkit", a] for a in APPLICATION)
    }
    assert not bad, f"{path.relative_to(PACKAGE)} imports the application: {sorted(bad)}"


def test_the_card_runner_never_imports_the_demo() -> None:
    for path in sorted((PACKAGE / "cards").rglob("*.py")):
        bad = {m for m in imported_modules(path) if m.startswith("loopkit.demo")}
        assert not bad, f"{path.relative_to(PACKAGE)} imports the demo: {sorted(bad)}"
