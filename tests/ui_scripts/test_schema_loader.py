"""The script format without a desktop: schema vs models, loading errors, variables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from loopkit_ui.scripts import STEP_TYPES, ScriptLoadError, load_schema, load_script
from loopkit_ui.scripts.model import ACTION_NEEDS, ACTIONS, FINDING_KINDS, ORACLES, STEP_MODELS
from loopkit_ui.scripts.variables import InterpolationError, Scope, interpolate

from .conftest import SCRIPTS

ALL_EXAMPLES = sorted(SCRIPTS.rglob("*.json"))


def _write(tmp_path: Path, doc: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def _errors(path: Path) -> list[str]:
    with pytest.raises(ScriptLoadError) as caught:
        load_script(path)
    assert caught.value.path == str(path.resolve())
    return caught.value.errors


# -- schema and models agree ---------------------------------------------------------------


def _def_name(step_type: str) -> str:
    return "".join(part.title() for part in step_type.split("_")) + "Step"


def test_schema_is_valid_and_shipped_as_package_data() -> None:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$defs"]["Step"]["properties"]["type"]["enum"] == list(STEP_TYPES)
    assert len(STEP_TYPES) >= 12


def test_every_step_model_matches_its_schema_definition() -> None:
    defs = load_schema()["$defs"]
    base = set(defs["StepBase"]["properties"])
    for step_type, model in STEP_MODELS.items():
        definition = defs[_def_name(step_type)]
        schema_fields = base | set(definition["properties"])
        model_fields = {f.alias or name for name, f in model.model_fields.items()}
        assert schema_fields == model_fields, step_type
        required_schema = set(definition["required"])
        required_model = {
            f.alias or name for name, f in model.model_fields.items() if f.is_required()
        }
        assert required_schema == required_model, step_type


def test_enumerations_match() -> None:
    defs = load_schema()["$defs"]
    assert defs["ActionStep"]["properties"]["action"]["enum"] == list(ACTIONS)
    assert defs["StepBase"]["properties"]["expect_findings"]["items"]["enum"] == list(FINDING_KINDS)
    assert defs["OracleConfig"]["properties"]["enabled"]["items"]["enum"] == list(ORACLES)
    rules = {
        r["if"]["properties"]["action"]["const"]: r["then"]["required"]
        for r in defs["ActionStep"]["allOf"]
        if "if" in r
    }
    assert rules == {k: list(v) for k, v in ACTION_NEEDS.items()}


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=lambda p: str(p.relative_to(SCRIPTS)))
def test_examples_valid_under_schema_and_models(path: Path) -> None:
    document = json.loads(path.read_text())
    jsonschema.Draft202012Validator(load_schema()).validate(document)
    loaded = load_script(path)
    assert loaded.path == path.resolve()


BAD_STEPS: list[tuple[dict[str, Any], str]] = [
    ({"type": "assert", "target": "X"}, "expected exactly one of 'equals'"),
    (
        {"type": "assert", "target": "X", "value": 1, "equals": 1},
        "expected exactly one of 'target'",
    ),
    ({"type": "action", "action": "type_text", "target": "X"}, "'text' is a required property"),
    ({"type": "action", "action": "set_cell", "target": "T", "text": "1"}, "'row' is a required"),
    ({"type": "action", "action": "click", "target": "X", "bogus": 1}, "'bogus' was unexpected"),
    ({"type": "action", "action": "tap", "target": "X"}, "'tap' is not one of"),
    ({"type": "wait_for", "target": "X", "condition": "soon"}, "'soon' is not one of"),
    ({"type": "repeat", "times": -1, "steps": []}, "-1 is less than the minimum of 0"),
    ({"type": "run"}, "expected exactly one of 'script', 'block'"),
    ({"type": "write_file", "path": "a"}, "expected exactly one of 'content', 'json'"),
    ({"type": "set", "var": "1x", "value": 1}, "does not match"),
    (
        {"type": "action", "action": "click", "target": "X", "expect": {}},
        "at least one of 'appear'",
    ),
]


@pytest.mark.parametrize(("step", "message"), BAD_STEPS)
def test_schema_and_models_both_reject_bad_steps(
    step: dict[str, Any], message: str, tmp_path: Path
) -> None:
    errors = _errors(_write(tmp_path, {"steps": [{"type": "log", "message": "ok"}, step]}))
    assert any(e.startswith("steps[1]") and message in e for e in errors), errors
    # The pydantic models refuse the same step on their own (they mirror the schema).
    from pydantic import TypeAdapter, ValidationError

    from loopkit_ui.scripts.model import Step

    with pytest.raises(ValidationError):
        TypeAdapter(Step).validate_python(step)


# -- loading errors ------------------------------------------------------------------------


def test_unknown_step_type_rejected_at_load_with_its_path(tmp_path: Path) -> None:
    doc = {
        "steps": [
            {"type": "log", "message": "fine"},
            {"type": "if", "condition": {"value": "a", "equals": "a"},
             "then": [{"type": "log", "message": "x"}, {"type": "asert", "target": "X", "equals": "1"}]},
        ]
    }  # fmt: skip
    errors = _errors(_write(tmp_path, doc))
    assert errors == [
        "steps[1].then[1]: unknown step type 'asert' (did you mean 'assert'?); expected one of: "
        + ", ".join(STEP_TYPES)
    ]


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    errors = _errors(_write(tmp_path, '{\n  "steps": [\n    {"type": "log",}\n  ]\n}'))
    assert errors == [
        "not valid JSON at line 3 column 20: Expecting property name enclosed in double quotes"
    ]


def test_missing_file_import_subscript_and_block(tmp_path: Path) -> None:
    assert _errors(tmp_path / "nope.json") == ["file not found"]
    assert _errors(_write(tmp_path, {"imports": ["lib.json"]})) == [
        "imports[0]: imported file 'lib.json' not found"
    ]
    errors = _errors(
        _write(
            tmp_path,
            {"steps": [{"type": "run", "script": "sub.json"}, {"type": "run", "block": "b"}]},
        )
    )
    assert errors == [
        "steps[0]: sub-script 'sub.json' not found",
        "steps[1]: unknown block 'b'; blocks: none",
    ]


def test_errors_in_imported_and_sub_scripts_name_that_file(tmp_path: Path) -> None:
    _write(tmp_path, {"steps": [{"type": "nope"}]}, "sub.json")
    main = _write(tmp_path, {"steps": [{"type": "run", "script": "sub.json"}]})
    with pytest.raises(ScriptLoadError) as caught:
        load_script(main)
    assert caught.value.path.endswith("sub.json")
    assert caught.value.errors[0].startswith("steps[0]: unknown step type 'nope'")


def test_import_cycle_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, {"imports": ["b.json"]}, "a.json")
    _write(tmp_path, {"imports": ["a.json"]}, "b.json")
    with pytest.raises(ScriptLoadError, match=r"import/run cycle: a.json -> b.json -> a.json"):
        load_script(tmp_path / "a.json")


def test_imports_merge_app_oracles_variables_blocks(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    _write(
        tmp_path / "lib",
        {
            "app": {"command": ["${file_dir}/app"], "cwd": "${file_dir}"},
            "oracles": {"error_labels": ["Err"]},
            "variables": {"a": 1, "b": 2},
            "blocks": {"go": [{"type": "log", "message": "go"}]},
        },
        "lib.json",
    )
    main = _write(
        tmp_path,
        {
            "imports": ["lib/lib.json"],
            "variables": {"b": 3},
            "steps": [{"type": "run", "block": "go"}],
        },
    )
    loaded = load_script(main)
    assert loaded.variables == {"a": 1, "b": 3}
    assert loaded.app is not None and loaded.app.command == [f"{tmp_path / 'lib'}/app"]
    assert loaded.oracles.error_labels == ["Err"]
    assert list(loaded.blocks) == ["go"]
    assert loaded.imports == [(tmp_path / "lib" / "lib.json").resolve()]


# -- variables -----------------------------------------------------------------------------


def test_interpolation_keeps_types_formats_text_and_names_unknowns() -> None:
    root = Scope({"n": 2, "flag": True, "items": [{"p": "10"}], "none": None}, env={"HOME": "/h"})
    scope = root.child({"x": "y"}, script_level=True)
    assert interpolate("${items}", scope) == [{"p": "10"}]
    assert interpolate("${n}", scope) == 2
    assert (
        interpolate("n=${n} flag=${flag} none=${none} p=${items.0.p}", scope)
        == "n=2 flag=true none= p=10"
    )
    assert interpolate({"a": ["${x}", "$${x}"]}, scope) == {"a": ["y", "${x}"]}
    assert interpolate("${env:HOME}/f", scope) == "/h/f"
    with pytest.raises(
        InterpolationError,
        match=r"unknown variable 'missing' in 'a \$\{missing\}'; defined variables: flag, items, n, none, x",
    ):
        interpolate("a ${missing}", scope)
    with pytest.raises(InterpolationError, match="'9' is not a key or index"):
        interpolate("${items.9}", scope)
    with pytest.raises(InterpolationError, match="environment variable 'NOPE'"):
        interpolate("${env:NOPE}", scope)


def test_assign_goes_to_the_defining_scope_or_the_script() -> None:
    script = Scope({"total": 0}).child(script_level=True)
    loop = script.child({"item": 1})
    loop.assign("total", 5)
    loop.assign("seen", True)
    loop.assign("item", 2)
    assert script.lookup("seen") is True and loop.values == {"item": 2}
    sub = script.child(script_level=True)
    sub.assign("local", 1)
    assert "local" not in script.values and sub.lookup("local") == 1
