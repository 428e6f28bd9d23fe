"""Videos of a script run: the ``start_recording`` / ``stop_recording`` steps record the desktop
with the same recorder as the MCP server (:mod:`loopkit_ui.recording`: ffmpeg, one recording at
a time, finalized however it ends) into the run's ``videos/`` folder (0700, files 0600); the
report links each video."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from loopkit_ui.private_files import create_private_file, make_private_dir
from loopkit_ui.recording import FinishedRecording, ScreenRecorder

__all__ = ["RunVideos"]


class RunVideos:
    """The videos of one run: ``run_dir/videos/NNN-label.mp4``, listed relative to the run
    folder in :attr:`files`. ``display``: the X display to record (the run's ``DISPLAY``)."""

    def __init__(self, run_dir: Path, *, display: str | None) -> None:
        self.run_dir = run_dir
        self.folder = run_dir / "videos"
        preexec = None
        if threading.current_thread() is threading.main_thread():
            import signal

            # The desktop's own helper: ffmpeg gets SIGTERM (and finalizes) if the runner dies.
            from loopkit_ui.headless_desktop import _pdeathsig

            preexec = _pdeathsig(signal.SIGTERM)
        self.recorder = ScreenRecorder(display=display, preexec=preexec)
        self.files: list[str] = []

    def start(self, index: int, label: str | None, *, fps: int, max_seconds: float) -> str:
        """Start a recording for step ``index``; answers the file (relative to the run).
        Raises RecordingError when it cannot start (no ffmpeg, no display, one running)."""
        make_private_dir(self.folder)
        slug = re.sub(r"[^a-z0-9]+", "-", (label or "video").lower()).strip("-")[:40] or "video"
        path = create_private_file(self.folder / f"{index:03d}-{slug}.mp4")
        try:
            recording = self.recorder.start(path, fps=fps, max_seconds=max_seconds)
            time.sleep(0.3)  # an ffmpeg that cannot open the display ends within this
            self.recorder.check_started(recording)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return str(path.relative_to(self.run_dir))

    def stop(self) -> FinishedRecording:
        """Stop the running recording; a finished video joins :attr:`files`."""
        finished = self.recorder.stop()
        if finished.size_bytes:
            self.files.append(str(finished.path.relative_to(self.run_dir)))
        return finished

    def close(self) -> FinishedRecording | None:
        """Stop a recording still running at the end of the run (its video is kept)."""
        if self.recorder.current is None:
            return None
        return self.stop()
