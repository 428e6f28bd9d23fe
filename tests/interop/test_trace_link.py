"""The board links a run to its trace: the run log's ``trace`` line names the trace, the
``tracing_url`` setting the viewer's page of one trace (``{trace_id}`` in it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from loopkit_board.service import BoardService
from loopkit_board.trace_link import trace_id_in_log

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _log(path: Path, *lines: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"type": "cut')
    return path


def test_the_trace_line_names_the_trace(tmp_path: Path) -> None:
    log = _log(tmp_path / "run.jsonl", {"type": "start", "data": {}},
               {"type": "trace", "run_id": "r", "data": {"trace_id": TRACE, "span_id": "b7ad6b7169203331"}})  # fmt: skip
    assert trace_id_in_log(log) == TRACE
    assert trace_id_in_log(_log(tmp_path / "none.jsonl", {"type": "start", "data": {}})) is None
    bad = {"type": "trace", "data": {"trace_id": "not-a-trace-id/../x"}}
    assert trace_id_in_log(_log(tmp_path / "bad.jsonl", bad)) is None
    assert trace_id_in_log(tmp_path / "missing.jsonl") is None


def test_the_board_builds_the_link_from_its_setting(tmp_path: Path) -> None:
    log = _log(tmp_path / "run.jsonl", {"type": "trace", "data": {"trace_id": TRACE}})
    prepared: Any = SimpleNamespace(log_path=str(log))
    (tmp_path / "cards").mkdir()
    service = BoardService(
        tmp_path / "cards",
        tracing_url="http://127.0.0.1:6006/projects/UHJvamVjdDox/traces/{trace_id}",
    )
    assert (
        service.trace_url(prepared) == f"http://127.0.0.1:6006/projects/UHJvamVjdDox/traces/{TRACE}"
    )
    assert service.trace_url(None) is None
    assert BoardService(tmp_path / "cards").trace_url(prepared) is None  # no setting: no link
    for wrong in ("javascript:alert(1)//{trace_id}", "http://viewer/traces/"):
        with pytest.raises(ValueError, match="expected a trace viewer's http"):
            BoardService(tmp_path / "cards", tracing_url=wrong)


def test_the_board_command_refuses_a_bad_tracing_url(tmp_path: Path) -> None:
    (tmp_path / "cards").mkdir()
    accounts = tmp_path / "accounts.toml"
    accounts.write_text("[accounts]\n")
    done = subprocess.run([sys.executable, "-m", "loopkit_board", "--cards", str(tmp_path / "cards"),
                           "--accounts", str(accounts), "--tracing-url", "ftp://x/{trace_id}"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and "--tracing-url" in done.stderr, done.stderr
