"""The structure of the source tree: who may import whom, no import circles, modules a newcomer can
hold (docs/architecture.md#packages-and-their-arrows draws it).

- The library (``loopkit`` minus its application folders) imports only the library: never the
  application (``cards/``, ``demo/``, ``evals/``, ``runs.py``, ``worker.py``) and never
  ``loopkit_tools``, ``loopkit_ui`` or ``loopkit_board``. Only the top-level
  ``loopkit/__init__.py`` names a few card names, for the type checker, loaded on first use.
- ``loopkit_tools`` < ``loopkit_ui`` < ``loopkit_board``: a package imports the library and the
  packages below it, never one above.
- The card runner (``cards/``) imports the library only: not the demo, not the companions (the demo
  assembles the tools). The demo, the evals and the two queue commands may import the card runner,
  ``loopkit_tools`` and ``loopkit_ui``; nothing in ``loopkit`` imports ``loopkit_board``.
- No import circle among the modules of ``src/`` and ``scripts/`` (``import_graph.py`` says what
  counts as an arrow: every import statement, in functions and under ``TYPE_CHECKING`` too).
- No module over 600 lines in ``src/`` or ``scripts/``.

Imports are read statically (``ast``), so these tests need nothing installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.import_graph import ROOT, arrows, circles, lines_of, module_files, ties

PACKAGE = ROOT / "src" / "loopkit"
# The card-runner application: its domain (cards/), the demo, and the two commands that queue and
# run cards (``python -m loopkit.runs``, ``python -m loopkit.worker``; named by the durable-runs
# issue, so they sit at the package root beside the library). The evals (``python -m
# loopkit.evals``) grade card runs through the demo's pipeline (evals/engine.py imports it): an
# application folder too, library adapter (evals/library.py) included.
APPLICATION = ("cards", "demo", "evals", "runs", "worker")
COMPANIONS = ("loopkit_tools", "loopkit_ui", "loopkit_board")

# Each part of the tree and the parts it may import (besides itself). ``library`` is loopkit
# minus the application; ``scripts`` (the transcript makers) may import anything.
MAY_IMPORT: dict[str, set[str]] = {
    "library": set(),
    "loopkit.cards": {"library"},
    "loopkit.demo": {"library", "loopkit.cards", "loopkit_tools", "loopkit_ui"},
    "loopkit.evals": {"library", "loopkit.cards", "loopkit.demo", "loopkit_tools", "loopkit_ui"},
    "loopkit.runs": {"library", "loopkit.cards", "loopkit.demo", "loopkit_tools", "loopkit_ui"},
    "loopkit.worker": {"library", "loopkit.cards", "loopkit.demo", "loopkit_tools", "loopkit_ui"},
    "loopkit_tools": {"library"},
    "loopkit_ui": {"library", "loopkit_tools"},
    "loopkit_board": {
        "library",
        *(f"loopkit.{a}" for a in APPLICATION),
        "loopkit_tools",
        "loopkit_ui",
    },
}

MAX_LINES = 600


def part_of(module: str) -> str:
    """The part of the tree a module belongs to (a key of ``MAY_IMPORT``, or ``scripts``)."""
    parts = module.split(".")
    if parts[0] == "loopkit":
        return f"loopkit.{parts[1]}" if len(parts) > 1 and parts[1] in APPLICATION else "library"
    return parts[0] if parts[0] in COMPANIONS else "scripts"


def circle_area(module: str) -> str:
    """Where a circle is reported: ``loopkit``'s subpackage or root, a companion, ``scripts``."""
    parts = module.split(".")
    if parts[0] != "loopkit":
        return parts[0] if parts[0] in COMPANIONS else "scripts"
    is_package = len(parts) > 1 and (PACKAGE / parts[1]).is_dir()
    return f"loopkit.{parts[1]}" if is_package else "loopkit (root modules)"


def library_files() -> list[Path]:
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).with_suffix("").parts[0] not in APPLICATION
        and p != PACKAGE / "__init__.py"
    ]


def test_the_layout_has_both_sides() -> None:
    names = {p.relative_to(PACKAGE).parts[0] for p in library_files()}
    assert {"abstractions", "middleware", "providers", "mcp", "agents", "sessions"} <= names
    assert (PACKAGE / "cards" / "runner.py").is_file() and (PACKAGE / "demo").is_dir()
    assert (PACKAGE / "runs.py").is_file() and (PACKAGE / "worker.py").is_file()
    # the card-runner domain moved into cards/: nothing of it is left at the package root
    for old in ("cards.py", "result.py", "runner.py", "config.py"):
        assert not (PACKAGE / old).exists(), old


@pytest.mark.parametrize("path", library_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_library_imports_only_the_library(path: Path) -> None:
    name = next(n for n, p in module_files().items() if p == path)
    bad = sorted(
        f"{a.target} (line {a.line})"
        for a in arrows()
        if a.source == name and part_of(a.target) != "library"
    )
    assert not bad, (
        f"{path.relative_to(ROOT)} (library) imports the application or a companion: {bad}"
    )


def test_the_top_level_names_the_application_only_for_the_type_checker() -> None:
    # `from loopkit import CardRunner` works (lazy _EXPORTS), but `import loopkit` loads no card
    eager = sorted(
        a.target
        for a in arrows()
        if a.source == "loopkit" and part_of(a.target) != "library" and not a.type_checking
    )
    assert not eager, f"src/loopkit/__init__.py imports the application at run time: {eager}"


@pytest.mark.parametrize("part", sorted(MAY_IMPORT))
def test_each_part_imports_only_the_parts_below_it(part: str) -> None:
    allowed = MAY_IMPORT[part] | {part}
    if part == "library":  # the top-level __init__'s TYPE_CHECKING names: the test above
        allowed |= {f"loopkit.{a}" for a in APPLICATION}
    bad = sorted(
        f"{a.source} -> {a.target} (line {a.line})"
        for a in arrows()
        if part_of(a.source) == part and part_of(a.target) not in allowed
    )
    assert not bad, f"{part} may import only {sorted(MAY_IMPORT[part])}; it imports: {bad}"


def test_the_rules_say_what_the_architecture_says() -> None:
    # the rules the issue names, spelled out, so a change of MAY_IMPORT is a deliberate one
    assert not MAY_IMPORT["library"]
    assert not {"loopkit.demo", *COMPANIONS} & MAY_IMPORT["loopkit.cards"]
    assert "loopkit_ui" not in MAY_IMPORT["loopkit_tools"]
    assert not any("loopkit_board" in allowed for allowed in MAY_IMPORT.values())
    assert set(MAY_IMPORT) == {"library", *(f"loopkit.{a}" for a in APPLICATION), *COMPANIONS}


CIRCLE_AREAS = sorted({circle_area(n) for n in module_files()})


@pytest.mark.parametrize("area", CIRCLE_AREAS)
def test_no_import_circles(area: str) -> None:
    found = [c for c in circles() if area in {circle_area(m) for m in c}]
    described = "\n".join(
        f"circle of {len(c)}: {', '.join(c)}\n  " + "\n  ".join(ties(c)) for c in found
    )
    assert not found, f"import circles in {area} (break each by what it means):\n{described}"


def test_the_circle_finder_finds_a_circle(tmp_path: Path) -> None:
    # the finder itself, on a tree it did not come from: a -> b -> c -> a (an import in a
    # function and one under TYPE_CHECKING count), d outside it, e -> f one way (relative)
    for name, body in {
        "scripts/a.py": "import b\n",
        "scripts/b.py": "def f():\n    from c import x\n",
        "scripts/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n",
        "scripts/d.py": "import a\n",
        "src/p/__init__.py": "",
        "src/p/e.py": "from . import f\nfrom .f import g\n",
        "src/p/f.py": "import json\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    tree = tmp_path / "src", tmp_path / "scripts"
    assert circles(*tree) == [["a", "b", "c"]]
    assert {(a.source, a.target, a.type_checking) for a in arrows(*tree)} == {
        ("a", "b", False),
        ("b", "c", False),
        ("c", "a", True),
        ("d", "a", False),
        ("p.e", "p.f", False),
    }


def source_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in module_files().values())


def test_no_module_over_600_lines() -> None:
    big = {f: lines_of(ROOT / f) for f in source_files() if lines_of(ROOT / f) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines (split each by concept): {big}"
