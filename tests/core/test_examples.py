"""The README's library example runs as shown (offline, with the scripted model)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs_offline() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "library_quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Oslo: 64.4 °F with light rain." in done.stdout


def test_readme_example_matches_the_runnable_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = (ROOT / "examples" / "library_quickstart.py").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    # the tools and the agent in the README are the ones the runnable example exercises
    for needle in (
        'def get_weather(city: Annotated[str, "city name"]) -> str:',
        "def convert(celsius: float) -> float:",
        ".use_run_log(",
        'instructions="Answer in one sentence."',
        "tools=[get_weather, convert],",
        "max_rounds=10,",
    ):
        assert needle in block.group(1) and needle in example, needle
