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
from pathlib import Path
from typing import Any

from loopkit.cards.config import ConfigError, RunnerConfig
from loopkit.cards.runner import ToolSource

__all__ = [
    "FINDINGS_DATABASE",
    "REGRESSION_FOLDER",
    "REPORT_FOLDER",
    "TESTER_MODULE",
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
    *,
    name: str,
    repo: Path,
    run_dir: Path,
    tools_settings: Any,
) -> ToolSource:
    """The tester's tools for a run of the card ``name`` in ``repo`` (folders in ``run_dir``);
    ``tools_settings`` is the run's ``ToolsConfig`` (how the app starts)."""
    try:
        module = importlib.import_module(TESTER_MODULE)
    except ImportError as e:
        raise ConfigError(
            f"the tester group needs {TESTER_MODULE} (install loopkit with the 'ui' extra): {e}"
        ) from None
    settings = module.TesterConfig(
        name=name,
        report_dir=run_dir / REPORT_FOLDER,
        database=config.runs_dir.resolve() / FINDINGS_DATABASE,
        scripts_dir=repo / REGRESSION_FOLDER,
        runner_out=run_dir / "ui-runs",
        ui_output_dirs=[run_dir / "ui"],
        default_app=regression_app(list(tools_settings.app_command), tools_settings.app_cwd),
        default_oracles={"error_labels": ["ErrorLabel"]},
    )
    source: ToolSource = module.TesterTools(settings)
    return source
