"""Running ``python -m loopkit.demo`` for real, as a user would, in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "examples" / "cards"
CARD_NAMES = [
    "total-ignores-the-discount",
    "delete-asks-for-confirmation",
    "validate-quantity-and-price",
]
#: The card of the fourth gap (missing ids): its run writes through the id fixer, a subagent.
ID_CARD = "every-control-has-an-accessible-id"
#: The cards added for the evals (issue 22): their bundled develop and test transcripts are
#: written by scripts/more_transcripts.py.
EVAL_CARDS = ["open-says-when-a-file-is-not-an-invoice", "discount-stays-between-0-and-100"]


@dataclass
class DemoRun:
    returncode: int
    output: str
    card: Path
    runs_dir: Path

    def log_path(self) -> Path:
        logs = sorted(self.runs_dir.rglob("*.jsonl"))
        assert logs, f"no run log under {self.runs_dir}\n{self.output}"
        return logs[-1]

    def events(self) -> list[dict[str, Any]]:
        # Every line must parse: a failed run still leaves valid JSON lines.
        return [json.loads(line) for line in self.log_path().read_text().splitlines()]

    def repo(self) -> Path:
        repos = sorted(p.parent for p in self.runs_dir.glob("*/repo/.git"))
        assert repos, f"no scratch repository under {self.runs_dir}\n{self.output}"
        return repos[-1]

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.repo(), capture_output=True, text=True, check=True
        ).stdout


def transcript_rounds(card: str) -> int:
    """The model requests of ``card``'s bundled transcript (one per turn): a run's rounds."""
    from loopkit import Script
    from loopkit.demo.run import bundled_transcripts

    return len(Script.load(bundled_transcripts()[card]).turns)


def copy_card(tmp_path: Path, name: str) -> Path:
    target = tmp_path / f"{name}.md"
    shutil.copy(CARDS / f"{name}.md", target)
    return target


def demo_env(tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a test runs the demo in: its own runs folder and private desktop."""
    full_env = {
        **os.environ,
        "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        "LOOPKIT_HEADLESS": "always",  # its own private desktop, also where DISPLAY is set
        "COLUMNS": "200",
        **(env or {}),
    }
    full_env.pop("LOOPKIT_IN_HEADLESS_SESSION", None)
    return full_env


def run_demo(
    tmp_path: Path, card: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> DemoRun:
    runs_dir = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), *args],
        cwd=ROOT,
        env=demo_env(tmp_path, env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return DemoRun(done.returncode, done.stdout + done.stderr, card, runs_dir)


def start_demo(
    tmp_path: Path, card: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start the demo without waiting (output: one text pipe, stdout and stderr together)."""
    return subprocess.Popen(
        [sys.executable, "-m", "loopkit.demo", str(card), *args],
        cwd=ROOT,
        env=demo_env(tmp_path, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


# -- processes (Linux /proc) -----------------------------------------------------------------


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid``."""
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        children: set[int] = set()
        for parent in frontier:
            with contextlib.suppress(OSError):
                text = Path(f"/proc/{parent}/task/{parent}/children").read_text()
                children |= {int(p) for p in text.split()}
        frontier = children - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline")
            .read_bytes()
            .replace(b"\0", b" ")
            .decode("utf-8", "replace")
        )
    except OSError:
        return ""


def carrying(text: str) -> set[int]:
    """Live processes whose environment contains ``text`` (a path unique to one test)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "environ").read_bytes():
                    found.add(int(entry.name))
    return {pid for pid in found if alive(pid)}


def survivors(pids: set[int], within: float = 60.0) -> list[str]:
    """The processes of ``pids`` still alive after ``within`` seconds (a generous deadline, not
    a timing claim), as "pid command"; they are killed then, so a failing test leaks nothing."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = sorted(p for p in pids if alive(p))
    described = [f"{p} {cmdline(p)[:120]}" for p in left]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return described


def wait_for_round(
    proc: subprocess.Popen[str], runs_dir: Path, call: str, within: float = 300
) -> set[int]:
    """Wait until the run log has a round that calls ``call``; returns every descendant of the
    demo seen meanwhile (polled all along, so short-lived ones are in too)."""
    seen: set[int] = set()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        seen |= descendants(proc.pid)
        for log in runs_dir.glob("*/run.jsonl"):
            for line in log.read_text(encoding="utf-8").splitlines():
                if '"type":"round"' in line and f'"{call}"' in line:
                    return seen | descendants(proc.pid)
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.02)
    raise AssertionError(f"no round calling {call} within {within} s")
