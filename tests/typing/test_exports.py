"""Every package's exports are visible to type checkers, exactly as they are at run time.

A package exports names in up to three lists that must agree: a literal ``__all__`` (what
``mypy --strict`` treats as re-exported), the ``TYPE_CHECKING`` imports (where mypy finds each
name's type) and, for lazy packages, ``_EXPORTS`` (name -> module, what ``__getattr__`` imports on
first use). A name in one list and not another is either invisible to mypy or an ImportError.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

PACKAGES = [
    "loopkit",
    "loopkit.agents",
    "loopkit.cards",
    "loopkit.evals",
    "loopkit.interop",
    "loopkit.interop.a2a",
    "loopkit.interop.ag_ui",
    "loopkit.interop.mcp_server",
    "loopkit.abstractions",
    "loopkit.mcp",
    "loopkit.middleware",
    "loopkit.providers",
    "loopkit.sessions",
    "loopkit_tools",
    "loopkit_tools.memory",
    "loopkit_ui",
]

# Module-level names that are plumbing, not exports.
PLUMBING = {"TYPE_CHECKING", "annotations", "lazy_exports", "__getattr__", "__dir__"}


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _imported(nodes: list[ast.stmt]) -> dict[str, str]:
    """name -> module for every ``from M import N`` among ``nodes``."""
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def _package_lists(
    package: str,
) -> tuple[list[str] | None, dict[str, str], dict[str, str], dict[str, str] | None]:
    """(__all__, eager imports, TYPE_CHECKING imports, _EXPORTS) read from the source."""
    path = SRC / Path(*package.split(".")) / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    all_names: list[str] | None = None
    exports: dict[str, str] | None = None
    eager: dict[str, str] = {}
    typing_only: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            typing_only.update(_imported(node.body))
            continue
        eager.update(_imported([node]))
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "__all__":
                assert isinstance(node.value, ast.List), f"{package}.__all__ is not a literal list"
                all_names = [ast.literal_eval(e) for e in node.value.elts]
            if isinstance(target, ast.Name) and target.id == "_EXPORTS":
                assert node.value is not None
                exports = ast.literal_eval(node.value)
    return all_names, eager, typing_only, exports


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_a_literal_that_matches_the_imports(package: str) -> None:
    all_names, eager, typing_only, exports = _package_lists(package)
    assert all_names is not None, f"{package} has no literal __all__"
    assert all_names == sorted(set(all_names)), f"{package}.__all__ is not sorted and unique"
    declared = {n: m for n, m in {**eager, **typing_only}.items() if n not in PLUMBING}
    assert set(all_names) == set(declared), (
        f"{package}: in __all__ but not imported: {sorted(set(all_names) - set(declared))}; "
        f"imported but not in __all__: {sorted(set(declared) - set(all_names))}"
    )
    if exports is not None:
        # Each lazy name comes from the module the type checker reads it from.
        assert exports == typing_only, f"{package}: _EXPORTS and the TYPE_CHECKING imports differ"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_at_run_time(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        module.NoSuchName  # noqa: B018


def test_import_loopkit_stays_lazy() -> None:
    """``import loopkit`` imports no submodule but the lazy loader; the builder and ``tool``
    import neither litellm, the MCP SDK, OpenTelemetry nor the other middleware."""
    code = (
        "import json, sys\n"
        "import loopkit\n"
        "first = sorted(m for m in sys.modules if m.startswith('loopkit'))\n"
        "from loopkit import ChatClientBuilder, tool, Content\n"
        "second = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "    ('litellm', 'mcp', 'opentelemetry', 'structlog', 'tenacity')\n"
        "    or m.startswith('loopkit.middleware.'))\n"
        "print(json.dumps([first, second]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    first, second = json.loads(out.stdout)
    assert first == ["loopkit", "loopkit._lazy"]
    assert second == ["loopkit.middleware.delegating"]
