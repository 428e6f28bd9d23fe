"""Video of the desktop with ffmpeg: one recording at a time, finished cleanly, bounded.

Linux: Debian's ``ffmpeg`` grabs the X display the app is on (``-f x11grab -i $DISPLAY``; under
the headless desktop that is its Xvfb). Windows: ``-f gdigrab -i desktop``; that command is
written from ffmpeg's documentation and cannot run on the Linux build machine.

The MP4 is fragmented and written out every half second, so a recording ended by anything
(ffmpeg killed outright included) is playable up to its last half second. A recording ends in
one of three ways:

- ``stop()``: ``q`` on ffmpeg's stdin (its own clean stop: the file is finalized), then SIGINT,
  then, as a last resort, a kill;
- the limits: ``-t`` (seconds) and ``-fs`` (bytes) make ffmpeg stop by itself;
- the owner's end: ``close()`` stops a running recording; on Linux a recording started from the
  main thread also gets SIGTERM from the kernel when its owner dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from loopkit_ui.backends.protocol import UIError

__all__ = [
    "DEFAULT_FPS",
    "MAX_BYTES",
    "MAX_SECONDS",
    "START_WAIT",
    "FinishedRecording",
    "Recording",
    "RecordingError",
    "ScreenRecorder",
    "ffmpeg_command",
    "video_seconds",
]

DEFAULT_FPS = 10
MAX_SECONDS = 1800.0  # the hard ceiling a caller may ask for (30 minutes)
MAX_BYTES = 200 * 1024 * 1024  # 200 MiB: a resources/read holds the whole file in memory
STOP_WAIT = 10.0
START_WAIT = 15.0  # how long ffmpeg may take to write the file's header (slow under load)


class RecordingError(UIError):
    """A recording could not start or stop (no ffmpeg, no display, one already running...)."""


def ffmpeg_command(
    ffmpeg: str,
    path: Path,
    *,
    display: str | None,
    fps: int,
    max_seconds: float,
    max_bytes: int,
    platform: str = sys.platform,
) -> list[str]:
    """The ffmpeg command line that records the screen into ``path`` (H.264 in MP4)."""
    if platform == "win32":
        grab = ["-f", "gdigrab", "-framerate", str(fps), "-i", "desktop"]
    else:
        if not display:
            raise RecordingError("no display to record: DISPLAY is not set for the server")
        grab = ["-f", "x11grab", "-draw_mouse", "1", "-framerate", str(fps), "-i", display]
    return [
        ffmpeg,
        "-hide_banner",
        "-nostats",
        "-loglevel",
        "error",
        "-y",
        *grab,
        "-t",
        f"{max_seconds:g}",
        "-fs",
        str(max_bytes),
        # x264 needs even sides; ultrafast keeps the recorder's CPU small beside the app.
        "-vf",
        "pad=ceil(iw/2)*2:ceil(ih/2)*2",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        # A fragmented MP4, each half second written out at once: whatever ends ffmpeg (even
        # SIGKILL, or a client killing the server's whole tree) leaves a playable file that
        # lacks at most the last half second. A keyframe a second starts the fragments.
        "-g",
        str(fps),
        "-flush_packets",
        "1",
        "-movflags",
        "+frag_keyframe+empty_moov+default_base_moof",
        "-frag_duration",
        "500000",
        str(path),
    ]


def video_seconds(path: Path) -> float | None:
    """The video's own length by ffprobe (not the time the recorder ran: a recording that hit
    its limit long before it was stopped is as long as its limit); None when ffprobe is missing
    or finds no length."""
    program = shutil.which("ffprobe")
    if program is None or not path.exists() or path.stat().st_size == 0:
        return None
    command = [program, "-v", "error", "-show_entries", "format=duration",
               "-of", "default=noprint_wrappers=1:nokey=1", str(path)]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        return round(float(done.stdout.strip().splitlines()[0]), 2)
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


@dataclass
class Recording:
    """A recording that is running (or has stopped by itself)."""

    path: Path
    process: subprocess.Popen[bytes]
    errors: IO[bytes]
    display: str
    fps: int
    max_seconds: float
    max_bytes: int
    started: float = field(default_factory=time.monotonic)

    def begun(self) -> bool:
        """Whether ffmpeg has written the file's header (from then on a stop, a signal or the
        limits leave a playable file)."""
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    def error_tail(self, chars: int = 1500) -> str:
        """The last of what ffmpeg wrote to stderr."""
        try:
            self.errors.seek(0)
            return self.errors.read().decode("utf-8", errors="replace").strip()[-chars:]
        except (OSError, ValueError):
            return ""


@dataclass(frozen=True)
class FinishedRecording:
    """A recording that ended, with its file."""

    path: Path
    seconds: float
    size_bytes: int
    ended: Literal["stopped", "limit", "failed"]
    detail: str | None = None


class ScreenRecorder:
    """Records the screen with ffmpeg, one recording at a time.

    ``display``: the X display to grab (Linux). ``ffmpeg``: the program (default: ``ffmpeg`` on
    PATH). ``preexec``: run in the child before ffmpeg starts (the server passes its
    parent-death signal setup)."""

    def __init__(
        self,
        *,
        display: str | None,
        ffmpeg: str | None = None,
        preexec: Callable[[], None] | None = None,
    ) -> None:
        self.display = display
        self.ffmpeg = ffmpeg
        self.preexec = preexec
        self.current: Recording | None = None

    def _program(self) -> str:
        found = self.ffmpeg or shutil.which("ffmpeg")
        if not found:
            raise RecordingError(
                "ffmpeg is not installed: video recording needs it (Debian: apt-get install "
                "ffmpeg; scripts/setup.sh --tests installs it)"
            )
        return found

    def start(
        self, path: Path, *, fps: int = DEFAULT_FPS, max_seconds: float, max_bytes: int = MAX_BYTES
    ) -> Recording:
        """Start recording into ``path`` (an existing private file is overwritten in place, so
        it keeps its mode). Returns at once; :meth:`check_started` tells whether ffmpeg runs."""
        if self.current is not None and self.current.process.poll() is None:
            raise RecordingError(
                f"a recording is already running ({self.current.path}); stop it first with "
                "ui_stop_recording"
            )
        if not 0 < max_seconds <= MAX_SECONDS:
            raise RecordingError(f"max_seconds must be above 0 and at most {MAX_SECONDS:g}")
        if not 0 < max_bytes <= MAX_BYTES:
            raise RecordingError(f"max_bytes must be above 0 and at most {MAX_BYTES}")
        command = ffmpeg_command(
            self._program(),
            path,
            display=self.display,
            fps=fps,
            max_seconds=max_seconds,
            max_bytes=max_bytes,
        )
        errors = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the recording
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                preexec_fn=self.preexec,
                # Its own process group: an MCP client ending the server's group (SIGTERM, then
                # SIGKILL two seconds later) would kill ffmpeg while it finalizes the file. The
                # parent-death signal still stops it when the server dies.
                start_new_session=sys.platform != "win32",
            )
        except OSError as error:
            errors.close()
            raise RecordingError(f"cannot start ffmpeg: {error.strerror or error}") from None
        self.current = Recording(
            path=path,
            process=process,
            errors=errors,
            display="desktop" if sys.platform == "win32" else str(self.display),
            fps=fps,
            max_seconds=max_seconds,
            max_bytes=max_bytes,
        )
        return self.current

    def check_started(self, recording: Recording) -> None:
        """Raise RecordingError when ffmpeg has already ended (a display it cannot open, an
        encoder it lacks): the recording did not start."""
        status = recording.process.poll()
        if status is None:
            return
        tail = recording.error_tail()
        recording.errors.close()
        recording.path.unlink(missing_ok=True)
        self.current = None
        raise RecordingError(
            f"ffmpeg ended at once (exit status {status}); it said: {tail or 'nothing'}"
        )

    def stop(self) -> FinishedRecording:
        """Stop the running recording cleanly and answer the finished file."""
        recording = self.current
        if recording is None:
            raise RecordingError("no recording is running; start one with ui_start_recording")
        self.current = None
        process = recording.process
        ended: Literal["stopped", "limit", "failed"] = "stopped"
        if process.poll() is not None:
            ended = "limit" if process.returncode == 0 else "failed"
        else:
            self._finish(process)
        seconds = video_seconds(recording.path)
        if seconds is None:  # no ffprobe, or nothing it can read: the time it ran
            seconds = round(time.monotonic() - recording.started, 1)
        detail = None
        if process.returncode not in (0, 255, -signal.SIGINT) and ended != "limit":
            # 255: ffmpeg's status after a SIGINT it handled (the file is finalized all the same)
            ended = "failed"
            detail = f"ffmpeg ended with status {process.returncode}: {recording.error_tail()}"
        recording.errors.close()
        size = recording.path.stat().st_size if recording.path.exists() else 0
        if size == 0 and ended != "failed":
            ended = "failed"
            detail = f"ffmpeg wrote nothing: {recording.error_tail() or 'no message'}"
        return FinishedRecording(recording.path, seconds, size, ended, detail)

    @staticmethod
    def _finish(process: subprocess.Popen[bytes]) -> None:
        """``q`` on stdin, then SIGINT (both finalize the file), then a kill."""
        try:
            assert process.stdin is not None
            process.stdin.write(b"q")
            process.stdin.close()
        except (OSError, ValueError):
            pass  # ffmpeg ended meanwhile
        try:
            process.wait(STOP_WAIT)
            return
        except subprocess.TimeoutExpired:
            pass
        if sys.platform != "win32":
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_WAIT)
                return
            except subprocess.TimeoutExpired:
                pass
        process.kill()
        process.wait(STOP_WAIT)

    def close(self) -> FinishedRecording | None:
        """Stop a running recording (the owner is ending); None when there was none."""
        if self.current is None:
            return None
        try:
            return self.stop()
        except OSError:
            return None
