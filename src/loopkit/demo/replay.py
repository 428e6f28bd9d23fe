"""The replay before done: a develop run's live checks run again, as a regression script, on a
fresh app of the committed code.

:class:`UIReplayer` is the demo's :class:`~loopkit.cards.verification.Replayer`. It takes the
run's live session (the tool calls since the app was started on the final code), turns its UI
calls into the script runner's steps (:func:`loopkit_ui.scripts.from_session.steps_from_session`:
actions as actions, each value read back as an assertion of that value, the steps that replay a
criterion's evidence named after it), writes the script into the run's folder
(``regression/<card>.json``), exports the repository's ``HEAD`` (what was committed, not the
working tree: a fix that was tested but never committed fails here) and runs the script once with
``loopkit_ui``'s runner on an app started from that export. The run is a row of the findings
database like any script run. The oracles that replay runs are those that find defects nobody
asked about (a crash dialog, an app that ended or hangs); the criteria themselves are the
script's assertions.

``loopkit_ui`` is imported when a replay runs (the ``ui`` extra), as the tester's tools are.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import subprocess
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit.cards.config import RunnerConfig
from loopkit.cards.evidence import EvidencePolicy, ToolRecord
from loopkit.cards.roles import Role
from loopkit.cards.verification import ReplayOutcome, Verification
from loopkit.demo.tester import FINDINGS_DATABASE, regression_app
from loopkit.demo.workspace import ScratchRepo, slug

__all__ = ["REPLAY_FOLDER", "SCRIPT_FOLDER", "UIReplayer", "demo_verification"]

#: In the run's folder: the derived script, and the runner's output with the exported code.
SCRIPT_FOLDER = "regression"
REPLAY_FOLDER = "replay"
#: The oracles of a replay: a crash, a new window, an app that ended or stopped answering.
REPLAY_ORACLES = {"enabled": ["process_ended", "not_responding", "window_event", "window_poll"]}


class UIReplayer:
    """Replays a run's session of ``repo`` (see the module docstring).

    ``app_command`` and ``app_cwd`` start the app as the run's ``start_app`` does; ``committed``:
    replay ``HEAD`` (the run commits) rather than the working tree; ``database``: the findings
    database the run is recorded in; ``env``: added to the runner's environment.
    """

    def __init__(
        self,
        *,
        repo: Path,
        run_dir: Path,
        name: str,
        title: str,
        app_command: Sequence[str],
        app_cwd: str,
        database: Path,
        committed: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self.repo = repo
        self.run_dir = run_dir
        self.name = slug(name)
        self.title = title
        self.app_command = list(app_command)
        self.app_cwd = app_cwd
        self.database = database
        self.committed = committed
        self.env = dict(env or {})

    async def replay(
        self, session: Sequence[ToolRecord], evidence: dict[str, list[str]]
    ) -> ReplayOutcome:
        """Replay ``session`` on a fresh app and say how it went."""
        from loopkit_ui.scripts.from_session import LiveCall, steps_from_session

        started = time.perf_counter()
        calls = [LiveCall(r.call_id, r.name, r.arguments, r.result, r.ok, r.error) for r in session]
        derived = steps_from_session(calls, evidence)
        if not any(step["type"] != "restart_app" for step in derived.steps):
            return ReplayOutcome(
                passed=False,
                failures=["the run checked nothing in the app since it was started on the final "
                          "code: there is nothing to replay"],
            )  # fmt: skip
        # Criteria shown only by calls with no step (a list of missing ids, a window list):
        # checked live only, said in the replay's report and in the run log.
        names = {r.call_id: r.name for r in session}
        live_only = {
            criterion: ids
            for criterion, ids in derived.not_replayed.items()
            if criterion not in derived.criteria
        }
        notes = [
            {
                "type": "log",
                "message": f"{criterion} checked live only, not replayed (nothing to replay in "
                + ", ".join(f"{names.get(i, '?')} {i}" for i in ids)
                + ")",
            }
            for criterion, ids in sorted(live_only.items())
        ]
        code = await asyncio.to_thread(self._code)
        app = regression_app(self.app_command, self.app_cwd)
        app["cwd"] = str(code if self.app_cwd in ("", ".") else code / self.app_cwd)
        script = {
            "name": f"regression: {self.title}",
            "description": "The live checks of the run that developed the card, replayed on a "
            "fresh app of the committed code (written by the runner from the run's UI calls).",
            "app": app,
            "oracles": REPLAY_ORACLES,
            "steps": [*notes, *derived.steps],
        }
        path = self.run_dir / SCRIPT_FOLDER / f"{self.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json_text(script), "utf-8")
        result = await asyncio.to_thread(self._run, path)
        failures = [
            f"step {step.index + 1} ({step.label}): {_first_line(step.message)}"
            for step in result.steps
            if step.status == "failed"
        ]
        if result.error:
            failures.insert(0, result.error)
        unexpected = [f for f in result.findings if f.severity == "error" and not f.expected]
        failures += [f"finding {f.fingerprint} {f.kind}: {f.summary}" for f in unexpected]
        return ReplayOutcome(
            passed=result.passed and not failures,
            script=str(path),
            steps=len(result.steps),
            criteria=sorted(derived.criteria),
            live_only=live_only,
            failures=failures,
            report=result.report,
            seconds=round(time.perf_counter() - started, 2),
        )

    def _code(self) -> Path:
        """The code the replay starts: ``HEAD`` exported into the run's folder (or the
        repository itself when the run does not commit)."""
        if not self.committed:
            return self.repo
        target = self.run_dir / REPLAY_FOLDER / "code"
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", "--format=tar", "HEAD"],
            cwd=self.repo,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
        return target

    def _run(self, path: Path) -> Any:
        scripts = importlib.import_module("loopkit_ui.scripts")
        config = scripts.RunnerConfig(
            out_dir=self.run_dir / REPLAY_FOLDER,
            db_path=self.database,
            env=self.env,
            screenshots="failures",
            gif=False,
        )
        return scripts.ScriptRunner(config, system_log=None).run(path)


def demo_verification(
    config: RunnerConfig, role: Role, scratch: ScratchRepo, tools: object, title: str
) -> Verification:
    """The verification of a demo run in ``role`` (one with ``verify: true``) of the card
    ``title``: edits count under the app's folder, the role's build and commit tools, and a
    replay of its live session (``replay = false`` in the config: evidence only) when the role
    drives the app and ``tools`` (the run's local tools) say how the app starts."""
    policy = EvidencePolicy(
        code_folders=(scratch.app_folder,),
        build_tool="build_app" if role.has("build_app") else None,
        commit_tool="git_commit" if role.has("git") else None,
    )
    settings = getattr(tools, "config", None)
    replayer = None
    if config.replay and role.has("ui") and hasattr(settings, "app_command"):
        replayer = UIReplayer(
            repo=scratch.repo,
            run_dir=scratch.run_dir,
            name=title,
            title=title,
            app_command=settings.app_command,  # type: ignore[union-attr]
            app_cwd=settings.app_cwd,  # type: ignore[union-attr]
            database=config.runs_dir.resolve() / FINDINGS_DATABASE,
            committed=role.has("git"),
        )
    return Verification(policy=policy, replayer=replayer)


def json_text(document: dict[str, Any]) -> str:
    import json

    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "failed")
