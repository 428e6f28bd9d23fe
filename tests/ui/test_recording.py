"""Video recording through the UI server: the real server process, Debian's ffmpeg grabbing the
headless desktop's Xvfb, the real invoice app. A recording is one at a time, private, served as
a resource, bounded by its limits, and finalized however it ends (stop, limit, server exit,
server killed). (The Windows command, gdigrab, cannot run here; it is only built and checked.)"""

from __future__ import annotations

import base64
import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.recording import ffmpeg_command
from loopkit_ui.testing import UIServerClient, running_app
from tests.installed import ffmpeg_or_unavailable
from tests.processes import processes_with, unique_marker

from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]


@pytest.fixture
def ffmpeg() -> str:
    return ffmpeg_or_unavailable()


@pytest.fixture
def app(headless_desktop: HeadlessDesktop, tmp_path: Path) -> Iterator[None]:
    env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(tmp_path / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=env):
        yield


def _args(out: Path) -> list[str]:
    return ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--attach-timeout", "20",
            "--output-dir", str(out)]  # fmt: skip


def _probe(ffmpeg: str, path: Path) -> dict[str, Any]:
    """What ffprobe reads from the file (it fails on an unfinished MP4: no moov atom)."""
    ffprobe = str(Path(ffmpeg).with_name("ffprobe"))
    done = subprocess.run(
        [ffprobe, "-v", "error", "-show_entries", "format=duration:stream=codec_name,width,height",
         "-of", "json", str(path)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"ffprobe cannot read {path}: {done.stderr}"
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _playable(ffmpeg: str, path: Path) -> float:
    info = _probe(ffmpeg, path)
    (stream,) = info["streams"]
    assert stream["codec_name"] == "h264" and stream["width"] > 0 and stream["height"] > 0
    return float(info["format"]["duration"])


def test_record_the_app_and_fetch_the_video(
    ffmpeg: str, app: None, headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with UIServerClient(_args(out), env=headless_desktop.child_env()) as ui:
        assert ui.call("ui_stop_recording").text.startswith("RecordingError: no recording")
        started = ui.call("ui_start_recording", max_seconds=60, fps=10)
        assert not started.error, started
        path = Path(started["path"])
        assert path.parent == out and started.structured["max_seconds"] == 60
        assert started.structured["display"] == headless_desktop.display
        twice = ui.call("ui_start_recording")
        assert twice.error and "already running" in twice.text
        for _ in range(3):
            assert ui.call("ui_click", target="AddItemButton")["success"]
        time.sleep(1.0)
        stopped = ui.call("ui_stop_recording")
        assert not stopped.error, stopped
        data = stopped.structured
        assert data["ended"] == "stopped" and data["path"] == str(path)
        assert data["size_bytes"] == path.stat().st_size > 0
        assert stopped.links == [data["uri"]] and data["mime_type"] == "video/mp4"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(out.stat().st_mode) == 0o700
        assert _playable(ffmpeg, path) >= 0.5
        (contents,) = ui.read_resource(data["uri"])
        assert contents.mime_type == "video/mp4"
        assert base64.b64decode(contents.blob) == path.read_bytes()
        again = ui.call("ui_stop_recording")
        assert again.error and "no recording is running" in again.text


def test_a_recording_stops_at_its_limit(
    ffmpeg: str, headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    with UIServerClient(_args(tmp_path / "out"), env=headless_desktop.child_env()) as ui:
        started = ui.call("ui_start_recording", max_seconds=1)
        assert not started.error, started
        time.sleep(2.5)
        stopped = ui.call("ui_stop_recording")
        assert not stopped.error, stopped
        assert stopped.structured["ended"] == "limit"
        length = _playable(ffmpeg, Path(stopped["path"]))
        assert 0.5 <= length <= 1.5
        # The answer is the video's own length (ffprobe's), not the 2.5 s the recorder ran.
        assert abs(stopped.structured["seconds"] - length) < 0.3, stopped
        over = ui.call("ui_start_recording", max_seconds=100000)
        assert over.error and "max_seconds" in over.text


def _ffmpeg_processes(path: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if str(path).encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _wait_until(condition: Any, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM", "SIGKILL"])
def test_a_recording_is_finished_when_the_server_ends(
    ffmpeg: str, headless_desktop: HeadlessDesktop, tmp_path: Path, how: str
) -> None:
    marker = unique_marker("LOOPKIT_UI_RECORDING_TEST")
    env = headless_desktop.child_env({marker.name: marker.value})
    ui = UIServerClient(_args(tmp_path / "out"), env=env)
    try:
        started = ui.call("ui_start_recording", max_seconds=120)
        assert not started.error, started
        path = Path(started["path"])
        time.sleep(1.5)
        assert _ffmpeg_processes(path)
        if how != "stdin closed":
            (server,) = [p for p in processes_with(marker)
                         if p not in _ffmpeg_processes(path)]  # fmt: skip
            os.kill(server, signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
    finally:
        ui.close()
    # ffmpeg ends with the server (even a killed one: its parent-death signal) and the file
    # is a finished video.
    assert _wait_until(lambda: not _ffmpeg_processes(path)), "ffmpeg outlived the server"
    assert _playable(ffmpeg, path) >= 0.5


def test_ffmpeg_killed_outright_still_leaves_a_playable_video(
    ffmpeg: str, headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    # The MP4 is fragmented and flushed every half second: no trailer is needed to play it.
    with UIServerClient(_args(tmp_path / "out"), env=headless_desktop.child_env()) as ui:
        started = ui.call("ui_start_recording", max_seconds=120)
        assert not started.error, started
        path = Path(started["path"])
        time.sleep(2.0)
        for pid in _ffmpeg_processes(path):
            os.kill(pid, signal.SIGKILL)
        assert _wait_until(lambda: not _ffmpeg_processes(path))
        stopped = ui.call("ui_stop_recording")
        assert stopped.error and "status -9" in stopped.text  # said, not hidden
    assert _playable(ffmpeg, path) >= 1.0


def test_without_ffmpeg_the_answer_says_what_to_install(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    env = headless_desktop.child_env({"PATH": str(tmp_path / "empty")})
    out = tmp_path / "out"
    with UIServerClient(_args(out), env=env) as ui:
        refused = ui.call("ui_start_recording")
    assert refused.error and "ffmpeg is not installed" in refused.text
    assert list(out.iterdir()) == []  # no empty video left behind


def test_the_windows_command_grabs_the_desktop() -> None:
    # gdigrab exists only on Windows: here the command line is checked, not run.
    command = ffmpeg_command("ffmpeg.exe", Path("C:/out/v.mp4"), display=None, fps=5,
                             max_seconds=30, max_bytes=1000, platform="win32")  # fmt: skip
    assert command[command.index("-f") : command.index("-f") + 6] == [
        "-f", "gdigrab", "-framerate", "5", "-i", "desktop",
    ]  # fmt: skip
    assert command[command.index("-t") + 1] == "30" and command[-1] == str(Path("C:/out/v.mp4"))
