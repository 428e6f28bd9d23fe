"""Running ``python -m loopkit.demo`` for real, as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


def copy_card(tmp_path: Path, name: str) -> Path:
    target = tmp_path / f"{name}.md"
    shutil.copy(CARDS / f"{name}.md", target)
    return target


def run_demo(
    tmp_path: Path, card: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> DemoRun:
    runs_dir = tmp_path / "runs"
    full_env = {
        **os.environ,
        "LOOPKIT_RUNS_DIR": str(runs_dir),
        "LOOPKIT_HEADLESS": "always",  # its own private desktop, also where DISPLAY is set
        "COLUMNS": "200",
        **(env or {}),
    }
    full_env.pop("LOOPKIT_IN_HEADLESS_SESSION", None)
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.demo", str(card), *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return DemoRun(done.returncode, done.stdout + done.stderr, card, runs_dir)
