"""``pip install loopkit`` as a user gets it: the wheel built from this tree, no extras.

The wheel is built as a user would build it (``pip wheel --no-deps``, setuptools in an isolated
build environment) from a copy of the tree's files (git's tracked and unignored ones, so the build
leaves nothing in the worktree), then: which files it carries (the four packages and their data,
nothing of tests/, examples/, bench/, the top-level scripts/ or a run's output), what it requires (pyproject's
base dependencies, the extras only behind ``extra == ...``), and, installed into a fresh virtual
environment, the README's library example runs against a fake Anthropic server on 127.0.0.1
(litellm's real HTTP code; the "model" is the fake server).
"""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.docs.test_docs_examples import ANSWER, runnable_blocks
from tests.fakes.fake_llm_server import FakeLLMServer
from tests.fakes.llm_script import Turn
from tests.installed import unavailable

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("loopkit", "loopkit_tools", "loopkit_ui", "loopkit_board")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _name(requirement: str) -> str:
    """The normalised project name of a requirement string (``psycopg[binary]>=3.2`` -> psycopg)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match[1]).lower()


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    assert completed.returncode == 0, (
        f"{' '.join(map(str, command))} ended with {completed.returncode}:\n"
        f"{completed.stdout[-4000:]}\n{completed.stderr[-4000:]}"
    )
    return completed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """loopkit's wheel, built from a copy of the tree's files."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        unavailable("the wheel is built from git's list of the tree's files: not a git checkout")
    tree = tmp_path_factory.mktemp("tree")
    listed = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT
    ).stdout
    for relative in filter(None, listed.split("\0")):
        source = ROOT / relative
        if source.is_file():  # a deleted file still listed by --cached
            (tree / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / relative)
    out = tmp_path_factory.mktemp("wheelhouse")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(tree)])
    (built,) = out.glob("loopkit-*.whl")
    return built


def test_the_wheel_carries_the_packages_and_nothing_else(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    dist_info = f"loopkit-{PYPROJECT['version']}.dist-info"
    tops = {n.split("/")[0] for n in names}
    assert tops == {*PACKAGES, dist_info}, sorted(tops)
    carried = {n for n in names if not n.startswith(dist_info + "/")}
    # every module of src/, and nothing that is not a file of src/
    modules = {str(p.relative_to(ROOT / "src")) for p in (ROOT / "src").rglob("*.py")}
    assert modules - carried == set(), sorted(modules - carried)[:10]
    assert {n for n in carried if not (ROOT / "src" / n).is_file()} == set()
    # the package data the code reads at run time
    for needed in (
        "loopkit/py.typed",
        "loopkit_ui/py.typed",
        "loopkit_board/templates/base.html",
        "loopkit_board/static/board.js",
    ):
        assert needed in carried, needed
    assert any(n.startswith("loopkit/") and n.endswith(".md") for n in carried)  # the roles
    # nothing a checkout or a run leaves beside the code
    unwanted = [
        n
        for n in carried
        if re.search(r"(^|/)(tests|examples|bench|runs|__pycache__|node_modules)/", n)
        or n.endswith((".pyc", ".sqlite", ".db", ".log", ".png", ".gif"))
    ]
    assert not unwanted, unwanted


def test_the_wheel_requires_the_base_dependencies_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        message = email.parser.Parser().parsestr(archive.read(metadata).decode())
    requires = message.get_all("Requires-Dist") or []
    base = {_name(r) for r in requires if "extra ==" not in r}
    assert base == {_name(r) for r in PYPROJECT["dependencies"]}, sorted(base)
    extras_only = {
        _name(r)
        for extra in PYPROJECT["optional-dependencies"].values()
        for r in extra
        if not r.startswith("loopkit[")
    } - base
    assert extras_only and not (extras_only & base)
    for heavy in ("pyside6-essentials", "dbos", "starlette", "pytest", "playwright", "mypy"):
        assert heavy not in base, heavy
    # every extra is declared, dev composed from the others (each version set once)
    assert set(message.get_all("Provides-Extra") or []) == set(PYPROJECT["optional-dependencies"])
    assert any(r.startswith("loopkit[") for r in PYPROJECT["optional-dependencies"]["dev"])


def test_pip_install_loopkit_runs_the_readmes_example(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    # PyPI or the machine's index (pip's own configuration); nothing of this tree's .venv
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], timeout=900)
    installed = _run([str(python), "-m", "pip", "list", "--format=freeze"]).stdout.lower()
    # what only an extra brings (starlette comes with the mcp SDK, a base dependency)
    for absent in ("pyside6-essentials", "dbos", "slack-bolt", "playwright", "pytest"):
        assert f"{absent}==" not in installed, f"{absent} came with the base install"

    (block,) = [b for b in runnable_blocks(ROOT / "README.md") if "fake-anthropic" in b.options]
    example = tmp_path / "example.py"
    example.write_text(
        "import loopkit, sys\n"
        f"assert loopkit.__file__.startswith({str(venv)!r}), loopkit.__file__\n" + block.code,
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ANTHROPIC_"))}
    with FakeLLMServer.anthropic() as server:
        server.enqueue(Turn.tool_call("get_weather", {"city": "Oslo"}), Turn.reply(ANSWER))
        env |= {
            "ANTHROPIC_BASE_URL": server.api_base,
            "ANTHROPIC_API_KEY": "sk-ant-wheel-test-0123",
        }
        completed = _run([str(python), str(example)], cwd=tmp_path, env=env, timeout=300)
        assert len(server.requests) == 2, "the example made no tool round trip"
    assert ANSWER in completed.stdout
    assert (tmp_path / "run.jsonl").is_file(), "the run log the example asks for"
