"""Run one script once with the script runner's command line, in a child process with an
allowlisted environment, and read its verdict (an agent's regression script)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit.abstractions import ToolError
from loopkit.child_env import child_environment
from loopkit_ui.scripts.results import RunResult

__all__ = ["run_script_once"]


async def run_script_once(
    path: Path,
    *,
    out: Path,
    database: Path,
    env: dict[str, str],
    env_passthrough: Sequence[str],
    timeout_s: float,
) -> dict[str, Any]:
    """Run ``path`` once (``python -m loopkit_ui.scripts run``, its runs in ``out``, recorded
    in ``database``); its verdict: ``script``, ``run_id``, ``status``, ``summary``, ``report``
    and ``details`` (the failed steps and findings). A :class:`ToolError` when the runner did
    not run it or did not finish within ``timeout_s``."""
    before = await asyncio.to_thread(_runs_in, out)
    command = [
        sys.executable, "-m", "loopkit_ui.scripts", "run", str(path),
        "--out", str(out), "--db", str(database),
        "--no-system-log", "--no-gif",
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=child_environment(list(env_passthrough), extra=env),
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
    except TimeoutError:
        _stop(process)
        await process.wait()
        raise ToolError(
            f"the script runner did not finish {path.name} within "
            f"{timeout_s:g} s and was stopped; a step may wait for "
            "something that never comes (check its expect and timeout)"
        ) from None
    except asyncio.CancelledError:
        _stop(process)
        await asyncio.shield(process.wait())
        raise
    text = output.decode("utf-8", "replace")
    new = sorted(await asyncio.to_thread(_runs_in, out) - before)
    result_file = new[-1] / "result.json" if new else None
    if result_file is None or not result_file.is_file():
        raise ToolError(
            f"the script runner did not run {path.name} (exit status {process.returncode}): "
            + " ".join(text.split())[:600]
        )
    run = RunResult.model_validate_json(result_file.read_text("utf-8"))
    failed_steps = [s for s in run.steps if s.status == "failed"]
    details = [f"failed {s.path} ({s.label}): {s.message.splitlines()[0] if s.message else ''}"
               for s in failed_steps]  # fmt: skip
    details += [f"finding {f.fingerprint} {f.kind}: {f.summary}" for f in run.unique_findings()]
    if run.error:
        details.insert(0, run.error)
    return {
        "script": str(path),
        "run_id": run.run_id,
        "status": run.status,
        "summary": f"{run.count('passed')} passed, {run.count('failed')} failed, "
        f"{run.count('skipped')} skipped, {len(run.unique_findings())} finding(s)",
        "report": run.report,
        "details": "\n".join(details),
    }


def _runs_in(out: Path) -> set[Path]:
    """The run folders the runner made in ``out`` so far (``out`` made when missing)."""
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs"
    return set(runs.glob("*")) if runs.exists() else set()


def _stop(process: asyncio.subprocess.Process) -> None:
    """Stop the runner: on SIGTERM it ends its app and exits."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
