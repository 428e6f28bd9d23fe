"""A real racing process against the file tools: zero leaks, zero writes outside.

A separate Python process (``rename_racer.py``) swaps a folder of the path with a symlink to a
folder outside the workspace, with renameat2(RENAME_EXCHANGE) in a tight loop, while the tool is
called over and over for a few seconds. The outside folder holds the same names as the inside one,
with a secret marker in their content and in a file name. An attempt *leaks* when the marker shows
up in any answer or error; a *write outside* is any change in the outside folder. Each test prints
its figures (attempts, answered, refused, leaks, writes outside, racer swaps).

The detector is tested too: the same race against a guard that checks with ``realpath`` and then
opens by name (tools_helpers.NaiveGuard, with its check-then-open window widened to 2 ms so the
test is reliable) must leak.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from tools_helpers import PY, NaiveGuard, Workspace

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools

pytestmark = pytest.mark.integration

RACE_SECONDS = 3.0
RACER = Path(__file__).with_name("rename_racer.py")


@dataclass
class Race:
    """The swapped pair and the outside folder of one race."""

    ws: Workspace
    swapped: Path  # invoice_app/race/sub, a real folder
    link: Path  # invoice_app/race/swap, a symlink to the outside folder
    outside_dir: Path


@dataclass
class Figures:
    tool: str
    attempts: int = 0
    answered: int = 0
    refused: int = 0
    leaks: int = 0
    unclean: int = 0
    writes_outside: int = 0
    swaps: int = 0

    def line(self) -> str:
        return (
            f"race {self.tool}: attempts {self.attempts}, answered {self.answered}, "
            f"refused {self.refused}, leaks {self.leaks}, writes outside {self.writes_outside}, "
            f"unclean {self.unclean}, racer swaps {self.swaps}"
        )


@pytest.fixture
def race(workspace: Workspace) -> Race:
    base = workspace.repo / "invoice_app" / "race"
    (base / "sub" / "deep").mkdir(parents=True)
    (base / "sub" / "deep" / "x.py").write_text("INSIDE = 1\n")
    outside_dir = workspace.outside / "secretdir"
    (outside_dir / "deep").mkdir(parents=True)
    (outside_dir / "deep" / "x.py").write_text(f"{workspace.marker} read through the race\n")
    (outside_dir / "deep" / f"{workspace.marker}.py").write_text("listed through the race\n")
    os.symlink(outside_dir, base / "swap")
    return Race(workspace, base / "sub", base / "swap", outside_dir)


def snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


@contextmanager
def racer(a: Path, b: Path, figures: Figures) -> Iterator[None]:
    proc = subprocess.Popen([PY, str(RACER), str(a), str(b)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().strip()
        assert ready == "ready", f"the racer did not start: {ready!r}"
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    figures.swaps = int(out.split()[-1])
    assert proc.returncode == 0


def run_race(
    race: Race,
    tool: str,
    call: Callable[[int], str],
    seconds: float,
    stop_at_first_leak: bool = False,
) -> Figures:
    """Call ``call(i)`` for ``seconds`` while the racer swaps; classify every answer."""
    figures = Figures(tool)
    marker = race.ws.marker
    before = snapshot(race.outside_dir)
    with racer(race.swapped, race.link, figures):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            i = figures.attempts
            figures.attempts += 1
            try:
                answer = call(i)
            except ToolError as e:
                figures.refused += 1
                answer = str(e)
            except Exception as e:  # anything but a ToolError would crash the model's loop
                figures.unclean += 1
                answer = f"{type(e).__name__}: {e}"
            else:
                figures.answered += 1
            if marker in answer:
                figures.leaks += 1
            if tool == "write_file" and (race.outside_dir / "deep" / f"w{i}.py").exists():
                figures.writes_outside += 1
            if stop_at_first_leak and figures.leaks + figures.writes_outside:
                break
    if tool == "write_file":
        after = snapshot(race.outside_dir)
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        figures.writes_outside = max(figures.writes_outside, len(changed))
    return figures


def calls(target: object, tool: str) -> Callable[[int], str]:
    """The tool call of attempt i: reading, listing (two folders in turn) or writing a new file."""
    if tool == "read_file":
        return lambda i: target.read_file(path="invoice_app/race/sub/deep/x.py")  # type: ignore[attr-defined]
    if tool == "list_files":
        folders = ["invoice_app/race/sub/deep", "invoice_app/race"]
        return lambda i: target.list_files(folder=folders[i % 2])  # type: ignore[attr-defined]
    return lambda i: target.write_file(  # type: ignore[attr-defined]
        path=f"invoice_app/race/sub/deep/w{i}.py", content=f"W = {i}\n"
    )


@pytest.mark.parametrize("tool", ["read_file", "list_files", "write_file"])
def test_a_racing_folder_swap_gets_nothing_out(race: Race, tool: str) -> None:
    local = LocalTools(race.ws.config())
    figures = run_race(race, tool, calls(local, tool), RACE_SECONDS)
    print(f"\n{figures.line()}")
    assert figures.leaks == 0, figures.line()
    assert figures.writes_outside == 0, figures.line()
    assert figures.unclean == 0, figures.line()
    # the race really happened: the racer swapped, and the tool saw both states of the folder
    assert figures.swaps > 0 and figures.answered > 0 and figures.refused > 0, figures.line()


class NaiveTools:
    """The three file tools over a NaiveGuard (check with realpath, wait 2 ms, open by name)."""

    def __init__(self, ws: Workspace) -> None:
        self.guard = NaiveGuard(ws.repo, ["invoice_app", "docs"], ["invoice_app"], window_s=0.002)

    def read_file(self, path: str) -> str:
        return self.guard.read_text(path)

    def list_files(self, folder: str) -> str:
        return "\n".join(self.guard.list_files(folder))

    def write_file(self, path: str, content: str) -> str:
        return f"wrote {self.guard.write_text(path, content)}"


@pytest.mark.parametrize("tool", ["read_file", "list_files", "write_file"])
def test_the_race_detector_catches_a_check_then_open_guard(race: Race, tool: str) -> None:
    figures = run_race(race, tool, calls(NaiveTools(race.ws), tool), 10.0, stop_at_first_leak=True)
    print(f"\nnaive guard, {figures.line()}")
    assert figures.leaks + figures.writes_outside > 0, figures.line()
