"""The tester's tools in a demo run: ``loopkit_ui``'s :mod:`~loopkit_ui.tester_tools`, set up
for the run's repository and folders.

loopkit never imports ``loopkit_ui``: the module is named here and imported when a role with the
``tester`` group runs, as the tools provider is. The findings database is shared by every run of
the runs folder (``RUNS/results.sqlite``) and by the script runner when it is given the same file,
so one defect seen by a script and by the agent is one finding, counted twice.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopkit.cards.config import ConfigError, RunnerConfig
from loopkit.cards.criteria import Criterion
from loopkit.cards.runner import CardRunOutcome, ToolSource
from loopkit.demo.workspace import ScratchRepo

__all__ = [
    "FINDINGS_DATABASE",
    "REGRESSION_FOLDER",
    "REPORT_FOLDER",
    "TESTER_MODULE",
    "end_test_run",
    "regression_app",
    "tester_tools",
]

#: The module with ``TesterConfig`` and ``TesterTools``.
TESTER_MODULE = "loopkit_ui.tester_tools"
#: Regression scripts go here, at the repository's root (committed with the run's commit).
REGRESSION_FOLDER = "ui_tests"
#: The findings database in the runs folder, shared by every run there.
FINDINGS_DATABASE = "results.sqlite"
#: The HTML report of a test run, in the run's folder.
REPORT_FOLDER = "test-report"


def regression_app(app_command: list[str], app_cwd: str) -> dict[str, Any]:
    """The script runner's ``app`` section for a script in ``ui_tests/``: the app the run's
    ``start_app`` starts (``${python}`` for this interpreter, the repository as seen from the
    script's folder), with its log in the runner's run folder. The run's ``app_env`` is left
    out: the script is committed, and a value there may be private."""
    command = list(app_command)
    if command and command[0] == sys.executable:
        command[0] = "${python}"
    cwd = "${file_dir}/.." + ("" if app_cwd in ("", ".") else f"/{app_cwd.strip('/')}")
    env = {"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "INVOICE_APP_LOG": "${run_dir}/app.log"}
    return {
        "command": command,
        "cwd": cwd,
        "env": env,
        "log_file": "${run_dir}/app.log",
        "startup_timeout": 20,
        "call_timeout": 3,
    }


def tester_tools(
    config: RunnerConfig,
    scratch: ScratchRepo,
    tools: ToolSource,
    name: str,
    *,
    run_log: Path | None = None,
    criteria: Sequence[Criterion] = (),
) -> ToolSource:
    """The tester's tools of a run of the card ``name`` in ``scratch``: the report in the run's
    folder, regression scripts in the repository's ``ui_tests/``, findings in the runs folder's
    database. ``tools`` are the run's local tools (their ``config`` says how the app starts);
    ``run_log``: the run's log, whose subagent runs the report lists; ``criteria``: the card's
    acceptance criteria (the report lists each with the steps that checked it)."""
    settings = getattr(tools, "config", None)
    if settings is None or not hasattr(settings, "app_command"):
        raise ConfigError(
            "the tester group needs the tools provider's LocalTools with a config (app_command, "
            "app_cwd): the regression scripts start the app as start_app does"
        )
    try:
        module = importlib.import_module(TESTER_MODULE)
    except ImportError as e:
        raise ConfigError(
            f"the tester group needs {TESTER_MODULE} (install loopkit with the 'ui' extra): {e}"
        ) from None
    run_dir = scratch.run_dir
    tester_config = module.TesterConfig(
        name=name,
        report_dir=run_dir / REPORT_FOLDER,
        database=config.runs_dir.resolve() / FINDINGS_DATABASE,
        scripts_dir=scratch.repo / REGRESSION_FOLDER,
        runner_out=run_dir / "ui-runs",
        ui_output_dirs=[run_dir / "ui"],
        default_app=regression_app(list(settings.app_command), settings.app_cwd),
        default_oracles={"error_labels": ["ErrorLabel"]},
        run_log=run_log,
        criteria=[c.model_dump() for c in criteria],
    )
    source: ToolSource = module.TesterTools(tester_config)
    return source


def end_test_run(
    tester: object, outcome: CardRunOutcome | None, *, cancelled: bool = False
) -> None:
    """The test run's findings row gets its real verdict (``tester``: the tester's tools, or
    anything else, which is left alone): ``cancelled``, ``passed`` (a RESULT: passed the runner
    accepted), ``error`` (the run could not run to its end: an exception, the token budget; the
    model never answered), else ``failed`` with the run's reason."""
    end = getattr(tester, "end", None)
    if end is None:
        return
    if cancelled or outcome is None:
        end("cancelled", "the run was cancelled")
        return
    result = outcome.result
    if result.done:
        end("passed", None)
    else:
        end("error" if outcome.run is None else "failed", result.reason)
