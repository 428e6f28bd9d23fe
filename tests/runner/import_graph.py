"""The import arrows between the project's own modules, read statically (``ast``), for the
structure tests in ``test_layering.py``.

A module is a ``.py`` file under ``src/`` (named by its dotted path, ``loopkit.demo.run``) or
under ``scripts/`` (named by its file name, as the scripts import each other: ``tester_transcripts``).
An arrow goes from a module to each project module it imports, wherever the import statement
stands: at the top, in a function, in a ``try``, and under ``if TYPE_CHECKING:`` too. An import
moved into a function or under ``TYPE_CHECKING`` still says that one module needs the other; a
circle is broken by what it means (a small module both sides use, a protocol, a function passed in),
so it counts (``Arrow.type_checking`` says which arrows load nothing at run time). ``from package import name`` is an arrow to
``package.name`` when that is a module, else to the package (its ``__init__.py``); importing
``a.b.c`` is an arrow to ``a.b.c`` only, not to its parent packages. Names loaded by
``importlib.import_module`` (the packages' lazy ``_EXPORTS``) are not arrows: they load on first
use, not when the module is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
SCRIPTS = ROOT / "scripts"


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    line: int
    type_checking: bool


def module_files(src: Path = SRC, scripts: Path = SCRIPTS) -> dict[str, Path]:
    """Every project module by its name."""
    found: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    for path in sorted(scripts.glob("*.py")):
        found[path.stem] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, and whether it stands under ``if TYPE_CHECKING:``."""

    def walk(
        node: ast.AST, type_checking: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, type_checking
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from walk(child, True)
            for child in node.orelse:
                yield from walk(child, type_checking)
            return
        for child in ast.iter_child_nodes(node):
            yield from walk(child, type_checking)

    yield from walk(tree, False)


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


@cache
def arrows(src: Path = SRC, scripts: Path = SCRIPTS) -> tuple[Arrow, ...]:
    """Every arrow between project modules (``TYPE_CHECKING`` ones flagged)."""
    modules = module_files(src, scripts)
    found: list[Arrow] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, type_checking in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    package = _package_of(name, path).split(".")
                    anchor = package[: len(package) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    whole = f"{base}.{alias.name}" if base else alias.name
                    targets.append(whole if whole in modules else base)
            for target in targets:
                # `import a.b.c` names a.b.c; a name of a module not in the project is no arrow
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.append(Arrow(name, target, node.lineno, type_checking))
    return tuple(found)


def graph(src: Path = SRC, scripts: Path = SCRIPTS) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in module_files(src, scripts)}
    for arrow in arrows(src, scripts):
        edges[arrow.source].add(arrow.target)
    return edges


def circles(src: Path = SRC, scripts: Path = SCRIPTS) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    edges = graph(src, scripts)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        # iterative, so a deep chain of imports cannot hit the recursion limit
        nonlocal counter
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def ties(component: list[str]) -> list[str]:
    """The arrows inside one circle, as lines a reader can follow (``a -> b (line 12)``)."""
    members = set(component)
    return [
        f"{a.source} -> {a.target} (line {a.line}{', under TYPE_CHECKING' if a.type_checking else ''})"
        for a in arrows()
        if a.source in members and a.target in members
    ]


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())
