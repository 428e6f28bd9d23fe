"""Loading scripts: JSON, validated against ``schema.json``, imports merged, sub-scripts loaded.

Everything wrong with a script is found here, before the app starts: bad JSON (line and column),
an unknown step type, a malformed step (its path, e.g. ``steps[2].then[0]``, and what was
expected), a missing import or sub-script, an import cycle.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import ValidationError

from loopkit.errors import KeepsFieldsWhenPickled
from loopkit_ui.scripts.model import (
    STEP_TYPES,
    AppConfig,
    OracleConfig,
    RunStep,
    Script,
    Step,
    StepBase,
)

__all__ = ["LoadedScript", "ScriptLoadError", "format_path", "load_schema", "load_script"]

MAX_ERRORS = 10
FILE_DIR = "${file_dir}"


class ScriptLoadError(KeepsFieldsWhenPickled, ValueError):
    """A script (or one it imports) is not valid; ``errors`` lists each problem."""

    def __init__(self, path: Path | str, errors: Sequence[str]) -> None:
        self.path = str(path)
        self.errors = list(errors)
        listed = "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(f"{self.path}: invalid script ({len(self.errors)} problem(s)):\n{listed}")


@cache
def load_schema() -> dict[str, Any]:
    """The script format's JSON Schema (shipped as package data)."""
    text = resources.files("loopkit_ui.scripts").joinpath("schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema())


@dataclass
class LoadedScript:
    """A validated script with its imports merged in.

    ``app``, ``oracles``, ``variables`` and ``blocks`` are the merged values (imports first, in
    order, then the script itself); ``subscripts`` holds the sub-scripts named literally by
    ``run`` steps, already loaded (keyed by resolved path).
    """

    path: Path
    script: Script
    app: AppConfig | None
    oracle_config: OracleConfig | None
    variables: dict[str, Any]
    blocks: dict[str, list[Step]]
    imports: list[Path] = field(default_factory=list)
    subscripts: dict[Path, LoadedScript] = field(default_factory=dict)

    @property
    def oracles(self) -> OracleConfig:
        """The oracle settings (the script's, else an import's, else the defaults)."""
        return self.oracle_config or OracleConfig()

    @property
    def name(self) -> str:
        """The script's name, else its file name."""
        return self.script.name or self.path.stem

    def resolve(self, relative: str) -> Path:
        """A path named in this script, relative to the script's folder."""
        return (self.path.parent / relative).resolve()


def format_path(parts: Iterable[str | int]) -> str:
    """``["steps", 2, "then", 0]`` -> ``steps[2].then[0]``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def _step_context(document: Any, parts: Sequence[str | int]) -> str:
    """`` (action 'click')`` for the innermost step on the path, for messages."""
    node, context = document, ""
    for part in parts:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, dict) and isinstance(node.get("type"), str):
            kind = node["type"]
            detail = node.get("action") if kind == "action" else None
            context = f" ({kind} {detail!r})" if isinstance(detail, str) else f" ({kind} step)"
    return context


def _describe_error(error: jsonschema.ValidationError, document: Any) -> str:
    parts = list(error.absolute_path)
    where = format_path(parts)
    context = _step_context(document, parts)
    if (
        error.validator == "enum"
        and parts
        and parts[-1] == "type"
        and not context.startswith(" (action")
    ):
        wanted = str(error.instance)
        close = difflib.get_close_matches(wanted, STEP_TYPES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        step = format_path(parts[:-1])
        return (
            f"{step}: unknown step type {wanted!r}{hint}; expected one of: {', '.join(STEP_TYPES)}"
        )
    if error.validator in ("oneOf", "anyOf") and isinstance(error.validator_value, list):
        options = error.validator_value
        if all(set(o) == {"required"} and len(o["required"]) == 1 for o in options):
            names = [o["required"][0] for o in options]
            given = [n for n in names if isinstance(error.instance, dict) and n in error.instance]
            how = "exactly one" if error.validator == "oneOf" else "at least one"
            return (
                f"{where}{context}: expected {how} of {', '.join(map(repr, names))}; "
                f"found {', '.join(map(repr, given)) if given else 'none'}"
            )
        if error.context:
            best = jsonschema.exceptions.best_match(error.context)
            return _describe_error(best, document)
    if error.validator == "unevaluatedProperties":
        return f"{where}{context}: {error.message.replace('Unevaluated', 'unknown')}"
    return f"{where}{context}: {error.message}"


def _pydantic_errors(error: ValidationError) -> list[str]:
    messages = []
    for item in error.errors():
        loc = list(item["loc"])
        # Discriminated unions put the step type into the path: steps, 0, 'action', 'target'.
        cleaned: list[str | int] = []
        for i, part in enumerate(loc):
            if isinstance(part, str) and part in STEP_TYPES and i and isinstance(loc[i - 1], int):
                continue
            cleaned.append(part)
        message = str(item["msg"]).removeprefix("Value error, ")
        messages.append(f"{format_path(cleaned)}: {message}")
    return messages


def validate_document(document: Any, source: Path | str) -> Script:
    """Check a parsed JSON document against the schema and build the model (ScriptLoadError)."""
    errors = sorted(
        _validator().iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path]
    )
    if errors:
        messages = list(dict.fromkeys(_describe_error(e, document) for e in errors))
        raise ScriptLoadError(source, messages[:MAX_ERRORS])
    try:
        return Script.model_validate(document)
    except ValidationError as error:
        raise ScriptLoadError(source, _pydantic_errors(error)[:MAX_ERRORS]) from None


def _read_json(path: Path) -> Any:
    try:
        if path.exists() and not path.is_file():
            # A folder, a pipe or a device: reading it would fail or never end.
            raise ScriptLoadError(path, ["not a regular file (expected a JSON script)"])
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptLoadError(path, ["file not found"]) from None
    except UnicodeDecodeError as error:
        raise ScriptLoadError(
            path, [f"not UTF-8 text (byte {error.start}): expected a JSON script in UTF-8"]
        ) from None
    except OSError as error:
        raise ScriptLoadError(path, [f"cannot read the file: {error.strerror or error}"]) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ScriptLoadError(
            path, [f"not valid JSON at line {error.lineno} column {error.colno}: {error.msg}"]
        ) from None
    except RecursionError:
        raise ScriptLoadError(path, ["JSON nested too deeply to read"]) from None


def _run_steps(steps: Sequence[Step], where: str) -> Iterable[tuple[str, RunStep]]:
    """Every ``run`` step (with its path) in a step list, nested ones included."""
    for i, step in enumerate(steps):
        here = f"{where}[{i}]"
        if isinstance(step, RunStep):
            yield here, step
        for key in ("then", "else_", "steps"):
            nested = getattr(step, key, None)
            if isinstance(nested, list) and nested and isinstance(nested[0], StepBase):
                yield from _run_steps(nested, f"{here}.{key.rstrip('_')}")


def _all_step_lists(script: Script) -> Iterable[tuple[str, list[Step]]]:
    yield from (("setup", script.setup), ("steps", script.steps), ("teardown", script.teardown))
    yield "invariants", script.invariants
    for name, block in script.blocks.items():
        yield f"blocks.{name}", block
    for i, operation in enumerate(script.operations):
        yield f"operations[{i}].steps", operation.steps


def _with_file_dir(value: Any, folder: str) -> Any:
    """Replace ``${file_dir}`` (the folder of the file the text is written in) at load time,
    so a library's paths stay right whichever script imports it."""
    if isinstance(value, str):
        return value.replace(FILE_DIR, folder)
    if isinstance(value, list):
        return [_with_file_dir(item, folder) for item in value]
    if isinstance(value, dict):
        return {key: _with_file_dir(item, folder) for key, item in value.items()}
    return value


def load_script(path: str | Path, *, _stack: tuple[Path, ...] = ()) -> LoadedScript:
    """Load, validate and merge a script file (raises :class:`ScriptLoadError`)."""
    path = Path(path).resolve()
    if path in _stack:
        chain = " -> ".join(p.name for p in (*_stack, path))
        raise ScriptLoadError(path, [f"import/run cycle: {chain}"])
    document = _with_file_dir(_read_json(path), str(path.parent))
    script = validate_document(document, path)
    app: AppConfig | None = None
    oracles: OracleConfig | None = None
    variables: dict[str, Any] = {}
    blocks: dict[str, list[Step]] = {}
    imported: list[Path] = []
    for i, name in enumerate(script.imports):
        target = (path.parent / name).resolve()
        if not target.is_file():
            raise ScriptLoadError(path, [f"imports[{i}]: imported file {name!r} not found"])
        library = load_script(target, _stack=(*_stack, path))
        app = library.app or app
        oracles = library.oracle_config or oracles
        variables.update(library.variables)
        blocks.update(library.blocks)
        imported.append(target)
    loaded = LoadedScript(
        path=path,
        script=script,
        app=script.app or app,
        oracle_config=script.oracles or oracles,
        variables={**variables, **script.variables},
        blocks={**blocks, **script.blocks},
        imports=imported,
    )
    problems = []
    for where, steps in _all_step_lists(script):
        for step_path, run in _run_steps(steps, where):
            if run.block is not None and "${" not in run.block and run.block not in loaded.blocks:
                known = ", ".join(sorted(loaded.blocks)) or "none"
                problems.append(f"{step_path}: unknown block {run.block!r}; blocks: {known}")
            if run.script is not None and "${" not in run.script:
                target = loaded.resolve(run.script)
                if not target.is_file():
                    problems.append(f"{step_path}: sub-script {run.script!r} not found")
                elif target not in loaded.subscripts:
                    loaded.subscripts[target] = load_script(target, _stack=(*_stack, path))
    if problems:
        raise ScriptLoadError(path, problems[:MAX_ERRORS])
    return loaded


def validate_files(paths: Iterable[str | Path]) -> dict[str, list[str]]:
    """Problems per file (an empty list: valid)."""
    result: dict[str, list[str]] = {}
    for path in paths:
        try:
            load_script(path)
            result[str(path)] = []
        except ScriptLoadError as error:
            result[str(path)] = [f"{error.path}: {e}" for e in error.errors]
    return result
