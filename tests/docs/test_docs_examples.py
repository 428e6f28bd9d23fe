"""The docs cannot drift: every code block of README.md and docs/*.md marked runnable runs here.

A block is runnable when the line before its fence is ``<!-- runnable -->`` (invisible on GitHub),
optionally with options: ``<!-- runnable: fake-anthropic desktop exit=1 -->``.

- ``python`` blocks run in this process, in a fresh namespace, in a temporary working folder;
  top-level ``await`` is allowed (as in ``python -m asyncio`` or a notebook).
- ``bash``/``sh`` blocks run with ``bash -euo pipefail`` in a temporary folder that links the
  repository's ``examples/``; ``python`` and ``.venv/bin/python`` there are this interpreter.
- ``fake-anthropic``: ``ANTHROPIC_BASE_URL`` points at a fake Anthropic server on 127.0.0.1 (no
  key, no internet; tests/fakes) that asks for ``get_weather(city="Oslo")`` and then answers; the
  test checks the tool's result went back to the model and the answer was printed.
- ``desktop``: the block needs the headless desktop (Xvfb, D-Bus, AT-SPI); without it the block
  is skipped, or fails under ``LOOPKIT_REQUIRE_DESKTOP`` (tests/installed.py).
- ``exit=N``: the status the shell block must end with (default 0).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.installed import unavailable

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!--\s*runnable(?::\s*(?P<options>[^>]*?))?\s*-->$")
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<language>[\w+-]*)")
LANGUAGES = {"python", "bash", "sh"}
OPTIONS = re.compile(r"^(fake-anthropic|desktop|exit=\d+)$")

#: Runnable blocks each document must keep (removing a marker must be a decision, not a slip).
MINIMUM = {
    "README.md": 2,
    "docs/agents.md": 10,
    "docs/cards.md": 2,
    "docs/architecture.md": 2,
    "docs/interop.md": 5,
    "docs/mcp.md": 2,
    "docs/memory.md": 1,
    "docs/observability.md": 1,
    "docs/providers.md": 3,
    "docs/roles.md": 3,
    "docs/scripts.md": 1,
    "docs/sessions.md": 4,
    "docs/transcripts.md": 2,
}

ANSWER = "Oslo: 18 °C and light rain."


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence
    language: str
    options: tuple[str, ...]
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def runnable_blocks(path: Path) -> list[Block]:
    """The blocks of ``path`` marked runnable; a marker not followed by a fenced block of a
    known language, or with an unknown option, is an error naming the line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    blocks: list[Block] = []
    for index, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        fence = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        assert fence, f"{where}:{index + 1}: a runnable marker must come right before a ``` fence"
        language = fence["language"].lower()
        assert language in LANGUAGES, f"{where}:{index + 2}: cannot run a {language!r} block"
        options = tuple((marker["options"] or "").split())
        for option in options:
            assert OPTIONS.match(option), f"{where}:{index + 1}: unknown option {option!r}"
        end = index + 2
        while end < len(lines) and not lines[end].startswith(fence["fence"]):
            end += 1
        assert end < len(lines), f"{where}:{index + 2}: the code block is not closed"
        code = "\n".join(lines[index + 2 : end])
        blocks.append(Block(path, index + 2, language, options, code))
    return blocks


BLOCKS = [block for path in DOCUMENTS for block in runnable_blocks(path)]


def test_each_document_keeps_its_runnable_blocks() -> None:
    counts = {name: 0 for name in MINIMUM}
    for block in BLOCKS:
        name = str(block.path.relative_to(ROOT))
        counts[name] = counts.get(name, 0) + 1
    short = {name: counts[name] for name, least in MINIMUM.items() if counts[name] < least}
    assert not short, f"runnable blocks missing (have {short}, need {MINIMUM})"


def test_a_marker_without_a_block_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.md"
    broken.write_text("text\n<!-- runnable -->\n\nnot a fence\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r"broken.md:2: a runnable marker must come"):
        runnable_blocks(broken)
    broken.write_text("<!-- runnable: fast -->\n```python\npass\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="unknown option 'fast'"):
        runnable_blocks(broken)


@pytest.fixture
def interpreter_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder where ``python`` and ``.venv/bin/python`` are this interpreter and
    ``examples`` is the repository's; returned after chdir-ing into it."""
    work = tmp_path / "work"
    venv_bin = work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (work / "examples").symlink_to(ROOT / "examples")
    wrapper = venv_bin / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    paths = [str(ROOT / "src"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.chdir(work)
    return work


@contextmanager
def fake_anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from tests.fakes.fake_llm_server import FakeLLMServer, Turn

    with FakeLLMServer.anthropic() as server:
        server.enqueue(Turn.tool_call("get_weather", {"city": "Oslo"}), Turn.reply(ANSWER))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.api_base)
        monkeypatch.delenv("ANTHROPIC_API_BASE", raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-test-0123456789")
        yield
        assert len(server.requests) == 2, "the example made no tool round trip"
        results = [
            block
            for message in server.requests[1].body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        assert results and "Oslo" in str(results[0]["content"])


def run_python(block: Block) -> None:
    code = compile(block.code, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, object] = {"__name__": "__main__"}
    result = eval(code, namespace)
    if inspect.iscoroutine(result):  # the block awaits at top level
        asyncio.run(result)


def run_shell(block: Block, work: Path) -> None:
    expected = next((int(o[5:]) for o in block.options if o.startswith("exit=")), 0)
    completed = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == expected, (
        f"{block.name} ended with {completed.returncode}, expected {expected}:\n"
        f"{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    )


def needs_desktop() -> None:
    missing = [tool for tool in ("Xvfb", "dbus-daemon") if shutil.which(tool) is None]
    if missing:
        unavailable(f"the headless desktop is not installed (no {', '.join(missing)})")


@pytest.mark.integration
@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_runnable_block(
    block: Block,
    interpreter_on_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if "desktop" in block.options:
        needs_desktop()
    if block.language != "python":
        run_shell(block, interpreter_on_path)
        return
    if "fake-anthropic" in block.options:
        with fake_anthropic(monkeypatch):
            run_python(block)
        assert ANSWER in capsys.readouterr().out
    else:
        run_python(block)
