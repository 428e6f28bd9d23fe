"""JSON UI test scripts: schema, loader, runner with seven oracles, reports, findings, walks.

A script drives an application through the same :class:`~loopkit_ui.backends.UIBackend` code as
the MCP server, and after every step the oracles look for crashes, hangs, new windows, error
labels and error logs on their own. See ``docs/scripts.md``.

Command line: ``python -m loopkit_ui.scripts run|validate|walk|findings``.
"""

from __future__ import annotations

from loopkit_ui.scripts.findings import Finding, crash_signs, fingerprint
from loopkit_ui.scripts.loader import LoadedScript, ScriptLoadError, load_schema, load_script
from loopkit_ui.scripts.model import STEP_TYPES, Script
from loopkit_ui.scripts.oracles import OracleSuite
from loopkit_ui.scripts.results import RunResult, StepResult
from loopkit_ui.scripts.runner import RunnerConfig, ScriptRunner
from loopkit_ui.scripts.store import ResultStore
from loopkit_ui.scripts.system_log import JournalSource, SyslogFileSource, SystemLogSource
from loopkit_ui.scripts.walk import generate_walk, write_walk
from loopkit_ui.scripts.window_events import AtspiWindowEvents, WindowEventSource

__all__ = [
    "STEP_TYPES",
    "AtspiWindowEvents",
    "Finding",
    "JournalSource",
    "LoadedScript",
    "OracleSuite",
    "ResultStore",
    "RunResult",
    "RunnerConfig",
    "Script",
    "ScriptLoadError",
    "ScriptRunner",
    "StepResult",
    "SyslogFileSource",
    "SystemLogSource",
    "WindowEventSource",
    "crash_signs",
    "fingerprint",
    "generate_walk",
    "load_schema",
    "load_script",
    "write_walk",
]
