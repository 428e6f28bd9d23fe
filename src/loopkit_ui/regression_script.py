"""A regression script the tester writes (``write_regression_script``): its name and document
checked before anything is written (the script runner's own schema names every problem), the
app and oracles sections given when it names none, and the written file loaded back as the runner
will load it (imports and sub-scripts resolved).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from loopkit.abstractions import ToolError
from loopkit_ui.scripts.loader import ScriptLoadError, load_script, validate_document

__all__ = ["SCRIPT_NAME", "write_script"]

#: A regression script's file name, without ``.json``.
SCRIPT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def write_script(
    folder: Path,
    name: str,
    script: dict[str, Any] | str,
    *,
    default_app: dict[str, Any] | None = None,
    default_oracles: dict[str, Any] | None = None,
) -> Path:
    """Check regression script ``name`` (an object or its JSON text) and write it to
    ``folder``; its path. :class:`~loopkit.abstractions.ToolError` naming every
    problem, and nothing left written, when it is not a script the runner takes."""
    if not SCRIPT_NAME.match(name):
        raise ToolError(
            f"name {name!r}: expected 1 to 64 characters of a-z, 0-9, - and _ (no folder, no .json)"
        )
    if isinstance(script, str):
        try:
            script = json.loads(script)
        except json.JSONDecodeError as e:
            raise ToolError(
                f"script: not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
            ) from None
        if not isinstance(script, dict):
            raise ToolError("script: expected a JSON object with name and steps")
    document = dict(script)
    if "app" not in document and "imports" not in document and default_app:
        document["app"] = default_app
    if "oracles" not in document and default_oracles:
        document["oracles"] = default_oracles
    label = f"regression script {name!r}"
    try:
        validate_document(document, label)
    except ScriptLoadError as error:
        raise ToolError(_problems(label, error)) from None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ToolError(f"{label}: {path} exists and is not a regular file")
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
    try:
        load_script(path)  # imports and sub-scripts resolved, as the runner will
    except ScriptLoadError as error:
        path.unlink(missing_ok=True)
        raise ToolError(_problems(label, error)) from None
    return path


def _problems(label: str, error: ScriptLoadError) -> str:
    listed = "\n".join(f"- {e}" for e in error.errors)
    return f"{label} is not valid for the script runner ({len(error.errors)} problem(s)):\n{listed}"
