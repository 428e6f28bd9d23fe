"""Bad input to the demo: exit status 2 and one clear line, before anything is started or created.

Each case runs ``python -m loopkit.demo`` for real without a display (so a run would start a
headless desktop) and with a fake ``Xvfb`` first on PATH that leaves a marker if it ever runs:
the marker proves no desktop was started, the missing ``runs/`` folder that nothing was created,
and the card file's bytes and mode that it was not touched.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .helpers import ROOT, copy_card

pytestmark = [pytest.mark.integration]

CARD = "delete-asks-for-confirmation"


def _config(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    return ["--config", str(path)]


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# case -> (arguments after the card, a part of the one line that must name the problem)
CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "config is a directory": (lambda t: ["--config", str(t)], "is a directory, not a TOML file"),
    "config is binary": (
        lambda t: ["--config", str(_file(t, "c.toml", b"\x00\xff\xfe\x89PNG\r\n"))],
        "is not UTF-8 text",
    ),
    "config is missing": (lambda t: ["--config", str(t / "nope.toml")], "config file not found"),
    "config is not TOML": (lambda t: _config(t, "model = \n"), "is not valid TOML"),
    "config is a device": (lambda t: ["--config", "/dev/zero"], "is not a regular file"),
    "log is a directory": (lambda t: ["--log", str(t)], "is a directory"),
    "log under a file": (
        lambda t: ["--log", str(_file(t, "f", b"x") / "run.jsonl")],
        "is not a folder",
    ),
    "transcript is missing": (
        lambda t: ["--transcript", str(t / "nope.json")],
        "cannot read model script",
    ),
    "transcript is not JSON": (
        lambda t: ["--transcript", str(_file(t, "t.json", b"{not json"))],
        "is not valid",
    ),
    "transcript has the wrong shape": (
        lambda t: ["--transcript", str(_file(t, "t.json", b'{"turns": 5}'))],
        "turns",
    ),
    "transcript is binary": (
        lambda t: ["--transcript", str(_file(t, "t.json", b"\xff\xfe\x00"))],
        "transcript",
    ),
    "tools value out of range": (
        lambda t: _config(t, "[tools]\nbuild_timeout_s = -1\n"),
        "[tools]: build_timeout_s: Input should be greater than 0",
    ),
    "tools unknown key": (lambda t: _config(t, "[tools]\nno_such = 1\n"), "no_such"),
    "tools not a table": (lambda t: _config(t, "tools = 5\n"), "tools"),
    "tools app_env not a table": (
        lambda t: _config(t, "[tools]\napp_env = 3\n"),
        "app_env",
    ),
    "tools_provider missing": (
        lambda t: _config(t, 'tools_provider = "no_such_module_here"\n'),
        "cannot be imported",
    ),
    "tools_provider without ToolsConfig": (
        lambda t: _config(t, 'tools_provider = "json"\n'),
        "has no ToolsConfig",
    ),
    "tools_provider empty": (lambda t: _config(t, 'tools_provider = ""\n'), "tools_provider"),
    "request_timeout zero": (lambda t: _config(t, "request_timeout = 0\n"), "request_timeout"),
    "max_card_bytes zero": (lambda t: _config(t, "max_card_bytes = 0\n"), "max_card_bytes"),
    "app_source is not the app": (
        lambda t: _config(t, f'app_source = "{t}"\n'),
        "is not the invoice app",
    ),
    "model without its key": (
        lambda t: ["--model", "anthropic/claude-sonnet-4-5"],
        "needs ANTHROPIC_API_KEY",
    ),
    "max rounds zero": (lambda t: ["--max-rounds", "0"], "max_rounds"),
    "max rounds not a number": (lambda t: ["--max-rounds", "many"], "invalid int value"),
    "unknown option": (lambda t: ["--no-such-option"], "unrecognized arguments"),
}


def _run(tmp_path: Path, card: Path, args: list[str], env: dict[str, str] | None = None):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    marker = tmp_path / "xvfb-was-started"
    fake = bin_dir / "Xvfb"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o755)
    full_env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        "LOOPKIT_HEADLESS": "auto",
        "COLUMNS": "200",
        **(env or {}),
    }
    for name in ("DISPLAY", "LOOPKIT_IN_HEADLESS_SESSION", "ANTHROPIC_API_KEY"):
        full_env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, marker


def _assert_refused(done: subprocess.CompletedProcess[str], marker: Path, tmp: Path, part: str):
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "error:" in lines[0] and part in lines[0], lines[0]
    assert not marker.exists(), "a headless desktop was started"
    assert not (tmp / "runs").exists(), "something was created"


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_settings_are_refused_before_anything_starts(tmp_path: Path, case: str) -> None:
    card = copy_card(tmp_path, CARD)
    card.chmod(0o664)
    before = card.read_bytes()
    make_args, part = CASES[case]
    done, marker = _run(tmp_path, card, make_args(tmp_path))
    _assert_refused(done, marker, tmp_path, part)
    assert card.read_bytes() == before and stat.S_IMODE(card.stat().st_mode) == 0o664


@pytest.mark.parametrize(
    ("case", "part"),
    [
        ("missing", "card file not found"),
        ("directory", "is not a regular file"),
        ("not utf-8", "not UTF-8 text"),
        ("above max_card_bytes", "is larger than 200 bytes (max_card_bytes)"),
        ("no bundled transcript", "has no transcript for"),
    ],
)
def test_a_card_that_cannot_be_read_is_refused_untouched(
    tmp_path: Path, case: str, part: str
) -> None:
    card = tmp_path / f"{CARD}.md"
    env: dict[str, str] = {}
    if case == "directory":
        card.mkdir()
    elif case == "not utf-8":
        card.write_bytes(b"---\ntitle: caf\xe9\nstate: New\n---\n")
    elif case == "above max_card_bytes":
        card = copy_card(tmp_path, CARD)  # a real card, about 1 KB
        env["LOOPKIT_MAX_CARD_BYTES"] = "200"
    elif case == "no bundled transcript":
        card = tmp_path / "some-other-card.md"
        card.write_text("---\ntitle: Other\nstate: New\n---\nBody\n", encoding="utf-8")
    before = card.read_bytes() if card.is_file() else None
    done, marker = _run(tmp_path, card, [], env)
    _assert_refused(done, marker, tmp_path, part)
    if before is not None:
        assert card.read_bytes() == before  # refused unread: never rewritten


def test_a_runs_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    card = copy_card(tmp_path, CARD)
    runs_file = _file(tmp_path, "runs-file", b"x")
    done, marker = _run(tmp_path, card, [], {"LOOPKIT_RUNS_DIR": str(runs_file)})
    _assert_refused(done, marker, tmp_path, f"runs_dir {runs_file} is not a folder")


def test_an_invalid_card_is_marked_failed_without_a_desktop(tmp_path: Path) -> None:
    """A card that was read but is not valid keeps the documented rule (its log, marked Failed),
    and that too happens before any desktop starts."""
    card = tmp_path / f"{CARD}.md"
    card.write_text("---\nstate: New\ncategory: Bug\n---\nNo title here.\n", encoding="utf-8")
    done, marker = _run(tmp_path, card, [])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "state: Failed" in card.read_text(encoding="utf-8")
    assert list((tmp_path / "runs").glob("*-invalid-card.jsonl"))
    assert not marker.exists()
