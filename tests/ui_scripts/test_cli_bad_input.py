"""``python -m loopkit_ui.scripts`` with bad input, every subcommand, as a real subprocess:
exit status 2, no traceback, the message names the input; nothing started (no app process) and
nothing created (no output folder, no database, no walk file)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loopkit_ui.scripts.store import ResultStore
from tests.processes import Marker, processes_with, unique_marker

from .conftest import PYTHON, SCRIPTS

pytestmark = pytest.mark.integration

MARKER = "LOOPKIT_UI_SCRIPTS_BAD_INPUT"


@dataclass
class Box:
    root: Path
    #: ``MARKER=<token>`` in the environment of everything this test starts (unique to the run:
    #: another copy of the suite runs this same test meanwhile)
    marker: Marker = field(default_factory=lambda: unique_marker(MARKER))

    @property
    def out(self) -> Path:
        return self.root / "out-not-created"

    def file(self, name: str, content: bytes | str) -> str:
        path = self.root / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return str(path)

    def script(self, name: str = "ok.json", **fields: object) -> str:
        """A valid script whose app would be a marked ``sleep`` (it must never start)."""
        body = {"name": "bad input", "app": {"command": ["sleep", "300"], "startup_timeout": 1,
                "env": {MARKER: self.marker.value}}, "steps": [{"type": "log", "message": "x"}]}  # fmt: skip
        body.update(fields)
        body = {key: value for key, value in body.items() if value is not None}  # None: leave out
        return self.file(name, json.dumps(body))

    def foreign_db(self) -> str:
        path = self.root / "other.sqlite"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE notes (text TEXT)")
        return str(path)

    @property
    def folder(self) -> str:
        (self.root / "folder").mkdir(exist_ok=True)
        return str(self.root / "folder")


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(tmp_path)


def _scripts(box: Box, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, MARKER: box.marker.value}
    return subprocess.run([PYTHON, "-m", "loopkit_ui.scripts", *args], env=env, cwd=box.root,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=90)  # fmt: skip


def _assert_refused(box: Box, result: subprocess.CompletedProcess[str], expect: str, *, report: bool = False) -> None:  # fmt: skip
    shown = f"{result.args!r}\nstdout {result.stdout!r}\nstderr {result.stderr!r}"
    assert result.returncode == 2, shown
    assert "Traceback" not in result.stdout + result.stderr, shown
    if report:  # validate: a report on stdout, one INVALID line per bad file
        assert "INVALID" in result.stdout and expect in result.stdout, shown
    else:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and expect in lines[0], shown
        assert " error: " in lines[0], shown
    assert not box.out.exists(), shown
    assert sys.platform != "linux" or processes_with(box.marker) == [], shown


# Files a script argument can be: (id, make it, text the message must contain)
BAD_SCRIPTS: list[tuple[str, Callable[[Box], str], str]] = [
    ("missing", lambda b: str(b.root / "missing.json"), "missing.json"),
    ("folder", lambda b: b.folder, "not a regular file"),
    ("device", lambda b: "/dev/null", "not a regular file"),
    ("not-utf8", lambda b: b.file("latin1.json", b'{"name": "caf\xe9"}'), "not UTF-8"),
    ("binary", lambda b: b.file("binary.json", bytes(range(256))), "not UTF-8"),
    ("empty", lambda b: b.file("empty.json", b""), "not valid JSON"),
    ("bad-json", lambda b: b.file("bad.json", '{"name": '), "not valid JSON"),
    ("deep-json", lambda b: b.file("deep.json", "[" * 200_000), "deep.json"),
    ("a-list", lambda b: b.file("list.json", "[1, 2]"), "is not of type 'object'"),
    (
        "unknown-step",
        lambda b: b.script("step.json", steps=[{"type": "clik"}]),
        "unknown step type",
    ),
    ("unknown-key", lambda b: b.script("key.json", colour="red"), "key.json"),
    ("odd-name", lambda b: b.file("odd\nname\u202e.json", "{"), "odd\\nname"),
]


@pytest.mark.parametrize(("case", "make", "expect"), BAD_SCRIPTS, ids=[c[0] for c in BAD_SCRIPTS])
def test_validate_reports_bad_files(box: Box, case: str, make: Callable[[Box], str], expect: str) -> None:  # fmt: skip
    result = _scripts(box, ["validate", make(box)])
    _assert_refused(box, result, expect, report=True)


@pytest.mark.parametrize(("case", "make", "expect"), BAD_SCRIPTS, ids=[c[0] for c in BAD_SCRIPTS])
def test_run_refuses_bad_scripts(box: Box, case: str, make: Callable[[Box], str], expect: str) -> None:  # fmt: skip
    result = _scripts(box, ["run", make(box), "--out", str(box.out), "--no-system-log"])
    _assert_refused(box, result, expect)


def test_validate_non_utf8_file_name(box: Box) -> None:
    name = os.fsdecode(b"bad\xffname.json")
    (box.root / name).write_bytes(b"{")
    result = _scripts(box, ["validate", name])
    _assert_refused(box, result, "bad\\udcffname.json", report=True)


# (id, arguments after "run SCRIPT" (a function of the box), text the one line must contain)
BAD_RUNS: list[tuple[str, Callable[[Box], list[str]], str]] = [
    ("no-app", lambda b: [b.script("noapp.json", app=None)], "names no 'app'"),
    ("no-app-second", lambda b: [b.script(), b.script("noapp.json", app=None)], "noapp.json"),
    ("out-is-file", lambda b: [b.script(), "--out", b.file("plain", "x")], "is a file"),
    ("out-under-file", lambda b: [b.script(), "--out", b.file("plain", "x") + "/sub"], "is under"),
    (
        "out-uncreatable",
        lambda b: [b.script(), "--out", "/proc/loopkit-test-out"],
        "cannot write there",
    ),
    ("db-folder", lambda b: [b.script(), "--db", b.folder], "not a regular file"),
    (
        "db-text",
        lambda b: [b.script(), "--db", b.file("notes.sqlite", "hello")],
        "not an SQLite database",
    ),
    ("db-foreign", lambda b: [b.script(), "--db", b.foreign_db()], "not one of results"),
    (
        "db-under-file",
        lambda b: [b.script(), "--db", b.file("plain", "x") + "/r.sqlite"],
        "is under",
    ),
    ("syslog-folder", lambda b: [b.script(), "--syslog-file", b.folder], "--syslog-file"),
    ("syslog-missing", lambda b: [b.script(), "--syslog-file", str(b.root / "nolog")], "nolog"),
    ("app-env-pair", lambda b: [b.script(), "--app-env", "NOVALUE"], "--app-env"),
    ("var-pair", lambda b: [b.script(), "--var", "=1"], "--var"),
    ("screenshots-choice", lambda b: [b.script(), "--screenshots", "all"], "--screenshots"),
    ("backend-choice", lambda b: [b.script(), "--backend", "gtk"], "--backend"),
    ("no-scripts", lambda b: [], "scripts"),
]


@pytest.mark.parametrize(("case", "args", "expect"), BAD_RUNS, ids=[c[0] for c in BAD_RUNS])
def test_run_refuses_bad_options(box: Box, case: str, args: Callable[[Box], list[str]], expect: str) -> None:  # fmt: skip
    given = args(box)
    if "--out" not in given:
        given += ["--out", str(box.out)]
    result = _scripts(box, ["run", *given])
    _assert_refused(box, result, expect)
    assert not any(box.root.glob("**/results.sqlite"))


OPS = str(SCRIPTS / "walk_operations.json")
BAD_WALKS: list[tuple[str, Callable[[Box], list[str]], str]] = [
    ("ops-missing", lambda b: ["--ops", str(b.root / "no-ops.json")], "no-ops.json"),
    ("ops-folder", lambda b: ["--ops", b.folder], "not a regular file"),
    ("ops-not-utf8", lambda b: ["--ops", b.file("ops.json", b"\xff\xfe")], "not UTF-8"),
    ("ops-none", lambda b: ["--ops", b.script("noops.json")], "operations"),
    ("seed-word", lambda b: ["--ops", OPS, "--seed", "x"], "--seed"),
    ("steps-zero", lambda b: ["--ops", OPS, "--steps", "0"], "--steps"),
    ("steps-negative", lambda b: ["--ops", OPS, "--steps", "-3"], "--steps"),
    ("steps-huge", lambda b: ["--ops", OPS, "--steps", "1000000000"], "--steps"),
    ("steps-word", lambda b: ["--ops", OPS, "--steps", "many"], "--steps"),
    ("output-folder", lambda b: ["--ops", OPS, "-o", b.folder], "is a folder"),
    (
        "output-under-file",
        lambda b: ["--ops", OPS, "-o", b.file("plain", "x") + "/w.json"],
        "is under",
    ),
    (
        "output-uncreatable",
        lambda b: ["--ops", OPS, "-o", "/proc/loopkit-test/w.json"],
        "/proc/loopkit-test",
    ),
]


@pytest.mark.parametrize(("case", "args", "expect"), BAD_WALKS, ids=[c[0] for c in BAD_WALKS])
def test_walk_refuses_bad_input(box: Box, case: str, args: Callable[[Box], list[str]], expect: str) -> None:  # fmt: skip
    given = args(box)
    if "--seed" not in given:
        given += ["--seed", "7"]
    if "-o" not in given:
        given += ["-o", str(box.out / "walk.json")]
    result = _scripts(box, ["walk", *given])
    _assert_refused(box, result, expect)


BAD_DATABASES: list[tuple[str, Callable[[Box], str], str]] = [
    ("missing", lambda b: str(b.out / "results.sqlite"), "no such file"),
    ("folder", lambda b: b.folder, "not a regular file"),
    ("text", lambda b: b.file("notes.sqlite", "not a database"), "not an SQLite database"),
    ("binary", lambda b: b.file("noise.sqlite", bytes(range(256)) * 8), "not an SQLite database"),
    ("empty", lambda b: b.file("empty.sqlite", b""), "empty"),
    ("foreign", lambda b: b.foreign_db(), "not one of results"),
]


@pytest.mark.parametrize(("case", "make", "expect"), BAD_DATABASES, ids=[c[0] for c in BAD_DATABASES])  # fmt: skip
def test_findings_refuses_what_is_not_a_results_database(box: Box, case: str, make: Callable[[Box], str], expect: str) -> None:  # fmt: skip
    path = make(box)
    before = Path(path).read_bytes() if Path(path).is_file() else None
    result = _scripts(box, ["findings", "--db", path])
    _assert_refused(box, result, expect)
    if before is not None:  # read only: the file is as it was
        assert Path(path).read_bytes() == before


def test_findings_reads_a_results_database(box: Box) -> None:
    database = box.root / "results.sqlite"
    ResultStore(database).runs()  # an empty results database, as a first run leaves it
    result = _scripts(box, ["findings", "--db", str(database)])
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result


@pytest.mark.parametrize("command", [[], ["run"], ["validate"], ["walk"], ["findings"]])
def test_help_documents_the_exit_codes(box: Box, command: list[str]) -> None:
    result = _scripts(box, [*command, "--help"])
    assert result.returncode == 0, result
    text = " ".join(result.stdout.split())
    for code in ("0 ok", "1 failed", "2 bad input", "130 interrupted"):
        assert code in text, text
