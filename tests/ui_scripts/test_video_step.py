"""The video steps of the script runner against the real invoice app under Xvfb: the videos are
finished MP4s in the run's private ``videos/`` folder, a recording left running is stopped at
the end of the run, and the HTML report links every video."""

from __future__ import annotations

import json
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.installed import ffmpeg_or_unavailable

from .conftest import LIBRARY, RunnerFactory

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def _duration(ffmpeg: str, path: Path) -> float:
    ffprobe = str(Path(ffmpeg).with_name("ffprobe"))
    done = subprocess.run(
        [ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"ffprobe cannot read {path}: {done.stderr}"
    return float(json.loads(done.stdout)["format"]["duration"])


def test_videos_are_recorded_and_linked_from_the_report(
    make_runner: RunnerFactory, tmp_path: Path
) -> None:
    ffmpeg = ffmpeg_or_unavailable()
    script = tmp_path / "video.json"
    script.write_text(
        json.dumps(
            {
                "name": "video of adding an item",
                "imports": [str(LIBRARY)],
                "steps": [
                    {"type": "start_recording", "label": "Add item", "max_seconds": 60},
                    {"type": "action", "action": "click", "target": "AddItemButton"},
                    {"type": "sleep", "seconds": 1},
                    {"type": "stop_recording"},
                    {"type": "start_recording", "label": "left running"},
                    {"type": "action", "action": "type_text", "target": "DiscountInput",
                     "text": "10"},
                    {"type": "sleep", "seconds": 1},
                ],
            }
        )
    )  # fmt: skip
    result = make_runner(screenshots="none").run(script)
    assert result.passed, [(s.path, s.message) for s in result.steps if s.status != "passed"]
    run_dir = Path(result.run_dir)
    assert result.videos == ["videos/000-add-item.mp4", "videos/004-left-running.mp4"]
    assert stat.S_IMODE((run_dir / "videos").stat().st_mode) == 0o700
    for video in result.videos:
        path = run_dir / video
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert _duration(ffmpeg, path) >= 0.5  # finished, even the one left running
    assert any("stopped" in note for note in result.notes)
    stop = next(s for s in result.steps if s.type == "stop_recording")
    assert re.match(r"000-add-item\.mp4: [\d.]+ s, \d+ bytes", stop.message), stop.message
    report = Path(result.report or "").read_text(encoding="utf-8")
    for video in result.videos:
        assert f'<video controls preload="metadata" width="640" src="{video}">' in report
        assert f'<a href="{video}">' in report
    saved = json.loads((run_dir / "result.json").read_text())
    assert saved["videos"] == result.videos


def test_stop_without_a_recording_fails_the_step(
    make_runner: RunnerFactory, tmp_path: Path
) -> None:
    script = tmp_path / "stop.json"
    script.write_text(
        json.dumps({"name": "stop first", "imports": [str(LIBRARY)],
                    "steps": [{"type": "stop_recording"}]})
    )  # fmt: skip
    result = make_runner(screenshots="none").run(script)
    assert not result.passed
    (step,) = [s for s in result.steps if s.type == "stop_recording"]
    assert step.status == "failed" and "no recording is running" in step.message
