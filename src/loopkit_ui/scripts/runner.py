"""The script runner: one run of one script, from starting the app to the report.

A run: load the script, start the app and attach the backend, take the oracles' baseline, run
setup, steps (skipped if setup failed) and teardown (always), close the app (always), then
write the HTML report, the GIF and a row in the SQLite database.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from loopkit.child_env import child_environment
from loopkit_ui.backends import default_backend_name
from loopkit_ui.scripts.app import AppProcess
from loopkit_ui.scripts.loader import LoadedScript, load_script
from loopkit_ui.scripts.model import AppConfig
from loopkit_ui.scripts.oracles import OracleSuite
from loopkit_ui.scripts.redact import redacted_result
from loopkit_ui.scripts.report import write_gif, write_report
from loopkit_ui.scripts.results import RunResult
from loopkit_ui.scripts.steps import Interpreter, RunState
from loopkit_ui.scripts.store import ResultStore
from loopkit_ui.scripts.system_log import SystemLogSource, default_system_log
from loopkit_ui.scripts.variables import Scope, interpolate
from loopkit_ui.scripts.video import RunVideos
from loopkit_ui.scripts.window_events import AtspiWindowEvents, WindowEventSource

__all__ = ["RunnerConfig", "ScriptRunner", "app_ident"]


class RunnerConfig(BaseModel):
    """Settings of a runner (not of a script)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    out_dir: Path = Field(default=Path("ui-runs"), description="runs go to OUT/runs/RUN_ID/")
    db_path: Path | None = Field(default=None, description="default: OUT/results.sqlite")
    backend: str | None = Field(default=None, description="atspi / uia (default: by platform)")
    env: dict[str, str] = Field(
        default_factory=dict, description="added to the environment (e.g. the desktop's)"
    )
    app_env: dict[str, str] = Field(default_factory=dict, description="extra env for the app only")
    app_env_passthrough: list[str] = Field(
        default_factory=list,
        description="further variables (names or globs) the app inherits beyond the allowlist "
        "of loopkit.child_env; a secret-looking name passes only when named exactly",
    )
    variables: dict[str, Any] = Field(default_factory=dict, description="override script vars")
    screenshots: Literal["steps", "failures", "none"] = "steps"
    gif: bool = True
    event_hook: bool = Field(default=True, description="use the accessibility event hook")

    @property
    def database(self) -> Path:
        """The SQLite file."""
        return self.db_path or self.out_dir / "results.sqlite"


def app_ident(app: AppConfig) -> str:
    """The program name the app logs under: ``app_name``, the module of ``python -m X``, or
    the command's file name."""
    if app.app_name:
        return app.app_name
    command = app.command
    if "-m" in command[:-1]:
        return command[command.index("-m") + 1].split(".")[0]
    return Path(command[-1] if command[0].endswith(("python", "python3")) else command[0]).stem


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "script"


class ScriptRunner:
    """Runs scripts and records them.

    ``system_log``: a :class:`SystemLogSource`, ``None`` for none, or ``"auto"`` (the journal
    or a syslog file where one exists). ``window_events``: an event hook to use instead of the
    default AT-SPI one (mostly for tests).
    """

    def __init__(
        self,
        config: RunnerConfig | None = None,
        *,
        system_log: SystemLogSource | Literal["auto"] | None = "auto",
        window_events: WindowEventSource | None = None,
    ) -> None:
        self.config = config or RunnerConfig()
        self._system_log = default_system_log() if system_log == "auto" else system_log
        self._window_events = window_events
        self.store = ResultStore(self.config.database)

    def run_many(self, scripts: Iterable[str | Path | LoadedScript]) -> list[RunResult]:
        """Run scripts one after the other (one app at a time)."""
        return [self.run(script) for script in scripts]

    def run(self, script: str | Path | LoadedScript) -> RunResult:
        """Run one script (loading it first if given a path) and record the run."""
        loaded = script if isinstance(script, LoadedScript) else load_script(script)
        if loaded.app is None:
            raise ValueError(f"{loaded.path}: the script (or its imports) names no 'app' to start")
        started = datetime.now(UTC)
        run_id = f"{started:%Y%m%d-%H%M%S}-{_slug(loaded.name)}-{secrets.token_hex(3)}"
        run_dir = (self.config.out_dir / "runs" / run_id).resolve()
        files_dir = run_dir / "files"
        shots_dir = run_dir / "screenshots"
        for folder in (files_dir, shots_dir):
            folder.mkdir(parents=True, exist_ok=True)
        result = RunResult(
            run_id=run_id,
            script=str(loaded.path),
            name=loaded.name,
            started=started.isoformat(timespec="seconds"),
            run_dir=str(run_dir),
        )
        env = self._environment()
        root = Scope(
            {
                "python": os.environ.get("LOOPKIT_UI_PYTHON") or _python(),
                "run_id": run_id,
                "run_dir": str(run_dir),
                "tmp": str(files_dir),
            },
            env=env,
        )
        scope = root.child({"script_dir": str(loaded.path.parent)}, script_level=True)
        for key, value in {**loaded.variables, **self.config.variables}.items():
            scope.set(key, interpolate(value, scope))
        app_config = AppConfig.model_validate(
            interpolate(loaded.app.model_dump(exclude_unset=True), scope)
        )
        log_file = Path(app_config.log_file) if app_config.log_file else None
        if log_file is not None and not log_file.is_absolute():
            log_file = run_dir / log_file
        backend_name = self.config.backend or default_backend_name(env)
        # The app under test gets the allowlisted environment (never a key), plus what the
        # runner's config and the script set explicitly.
        app_env = child_environment(
            self.config.app_env_passthrough,
            extra={**self.config.env, **self.config.app_env},
            environ=env,
        )
        if backend_name == "atspi" and "QT_QPA_PLATFORM" not in app_config.env:
            # An inherited offscreen platform would hide the app from AT-SPI.
            app_env.pop("QT_QPA_PLATFORM", None)
        app = AppProcess(app_config, app_env, run_dir / "app-output.log", backend_name=backend_name)
        hook = self._window_events
        if hook is None and self.config.event_hook and backend_name == "atspi":
            hook = AtspiWindowEvents(env.get("AT_SPI_BUS_ADDRESS"), timeout=app_config.call_timeout)
        oracles = OracleSuite(
            loaded.oracles,
            log_file=log_file,
            window_events=hook,
            system_log=self._system_log,
            ident=loaded.oracles.system_log_ident or app_ident(app_config),
        )
        screenshots: list[str] = []

        def screenshot(label: str) -> str | None:
            shot = self._screenshot(app, shots_dir, label, result.notes)
            if shot is not None:
                screenshots.append(shot)
            return shot

        state = RunState(
            app=app,
            oracles=oracles,
            files_dir=files_dir,
            screenshot=screenshot,
            screenshots=self.config.screenshots,
            notes=result.notes,
            videos=RunVideos(run_dir, display=env.get("DISPLAY")),
        )
        interpreter = Interpreter(state)
        clock = time.perf_counter()
        try:
            try:
                app.start()
                oracles.attach(app)
                started_ok = True
            except Exception as error:
                result.error = f"could not start the app: {type(error).__name__}: {error}"
                started_ok = False
            if started_ok:
                result.notes[:0] = oracles.notes
                state.phase = "setup"
                ok = interpreter.run_list(loaded.script.setup, "setup", scope, loaded)
                state.phase = "steps"
                if ok:
                    ok = interpreter.run_list(loaded.script.steps, "steps", scope, loaded)
                else:
                    for i, step in enumerate(loaded.script.steps):
                        interpreter._record_skipped(step, f"steps[{i}]", 0)
                state.phase = "teardown"
                interpreter.run_list(
                    loaded.script.teardown, "teardown", scope, loaded, keep_going=True
                )
        finally:
            assert state.videos is not None
            with contextlib.suppress(Exception):
                if (still := state.videos.close()) is not None:  # finalized before the app ends
                    result.notes.append(f"the recording still running was stopped: {still.path}")
            result.videos = list(state.videos.files)
            result.app_exit = app.close()
            result.app_pids = list(app.pids)
            with contextlib.suppress(Exception):
                state.findings += oracles.final_check()
            oracles.close()
        result.steps = state.results
        result.findings = state.findings
        result.screenshots = screenshots
        result.ms = round((time.perf_counter() - clock) * 1000, 1)
        result.finished = datetime.now(UTC).isoformat(timespec="seconds")
        unexpected = [f for f in result.findings if f.severity == "error" and not f.expected]
        if result.error:
            result.status = "error"
        elif result.count("failed") or unexpected:
            result.status = "failed"
        if self.config.gif and screenshots:
            result.gif = str(write_gif([run_dir / s for s in screenshots], run_dir / "run.gif"))
        report = run_dir / "report.html"
        result.report = str(report)
        result = redacted_result(result)  # result.json and what the CLI prints carry no secret
        (run_dir / "result.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
        write_report(result, report)
        self.store.record(result)
        return result

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.config.env)
        return env

    @staticmethod
    def _screenshot(app: AppProcess, folder: Path, label: str, notes: list[str]) -> str | None:
        """A PNG of the app's windows (the screen cut to their bounds)."""
        backend = app.backend
        if backend is None or app.poll() is not None:
            return None
        name = f"{_slug(label)}.png"
        path = folder / name
        try:
            backend.screenshot(str(path))
            boxes = [w.bounds for w in backend.list_windows() if w.bounds and w.bounds[2] > 0]
        except Exception as error:
            notes.append(f"screenshot {label} failed: {error}")
            return None
        if boxes:
            from PIL import Image

            left = max(0, min(b[0] for b in boxes))
            top = max(0, min(b[1] for b in boxes))
            right = max(b[0] + b[2] for b in boxes)
            bottom = max(b[1] + b[3] for b in boxes)
            with Image.open(path) as image:
                box = (left, top, min(right, image.width), min(bottom, image.height))
                if box[2] > box[0] and box[3] > box[1]:
                    image.crop(box).save(path)
        return f"screenshots/{name}"


def _python() -> str:
    import sys

    return sys.executable


def environment_from_pairs(pairs: Iterable[str]) -> Mapping[str, str]:
    """``["A=1", "B=2"]`` -> ``{"A": "1", "B": "2"}`` (ValueError naming a bad pair)."""
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected NAME=VALUE, got {pair!r}")
        result[key] = value
    return result
