"""What an outside client gets from the UI server (the real process over stdio, the real
invoice app): a title, annotations, parameter descriptions and an outputSchema on every tool,
loopkit's version in serverInfo, structured answers that satisfy their schema beside the text
a model reads, typed property values, and trees and screenshots as MCP resources."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import loopkit
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import ToolAnswer, UIServerClient, running_app

from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]

READS = {"ui_list_windows", "ui_tree", "ui_missing_ids", "ui_get_element", "ui_get_text", "ui_get_property",
         "ui_get_cell", "ui_assert_exists", "ui_assert_visible", "ui_assert_enabled",
         "ui_assert_value", "ui_assert_text", "ui_wait_for", "ui_screenshot", "ui_snapshot",
         "ui_get_clipboard", "ui_list_apps", "ui_attach_app"}  # fmt: skip
DESTRUCTIVE = {"ui_click", "ui_double_click", "ui_right_click", "ui_type_text", "ui_press_keys",
               "ui_select_item", "ui_drag_and_drop", "ui_set_cell", "ui_restart_app",
               "ui_set_text", "ui_click_at", "ui_drag_at", "ui_scroll", "ui_window",
               "ui_run_steps", "ui_launch_app"}  # fmt: skip


@pytest.fixture(scope="module")
def ui(headless_desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    tuple[UIServerClient, dict[str, Any]]
]:  # fmt: skip
    """The server attached to the invoice app, and its tools by name."""
    logs = tmp_path_factory.mktemp("answers")
    env = {"PYTHONPATH": str(EXAMPLES_DIR), "INVOICE_APP_LOG": str(logs / "app.log")}
    with running_app(headless_desktop, [PYTHON, "-m", "invoice_app"], env=env):
        args = ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--attach-timeout", "20",
                "--output-dir", str(logs / "out")]  # fmt: skip
        with UIServerClient(args, env=headless_desktop.child_env()) as client:
            yield client, {tool.name: tool for tool in client.tools()}


def _valid(tools: dict[str, Any], name: str, got: ToolAnswer) -> dict[str, Any]:
    """The structured answer, checked against the tool's outputSchema."""
    assert got.structured is not None, f"{name} answered no structured content: {got}"
    jsonschema.Draft202012Validator(tools[name].output_schema).validate(got.structured)
    assert isinstance(got.structured, dict)
    return got.structured


def test_every_tool_describes_itself_for_outside_clients(
    ui: tuple[UIServerClient, dict[str, Any]],
) -> None:
    client, tools = ui
    info = client.server_info()
    assert (info.name, info.version) == ("loopkit-ui", loopkit.__version__)
    assert len(tools) >= 25
    for name, tool in tools.items():
        assert tool.title and tool.annotations is not None, name
        hints = tool.annotations
        assert hints.title == tool.title, name
        assert hints.read_only_hint is (name in READS), name
        assert hints.destructive_hint is (name in DESTRUCTIVE), name
        assert hints.idempotent_hint is (name in READS), name
        assert hints.open_world_hint is False, name
        for param, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{name}.{param} has no description"
        schema = tool.output_schema
        assert schema is not None and schema.get("type") == "object", name
        jsonschema.Draft202012Validator.check_schema(schema)


def test_structured_answers_beside_unchanged_text(
    ui: tuple[UIServerClient, dict[str, Any]],
) -> None:
    client, tools = ui
    text = client.call("ui_get_text", target="TotalLabel")
    assert text.text == "Total: 250.00"  # what a model reads stays plain text
    assert _valid(tools, "ui_get_text", text) == {"text": "Total: 250.00"}

    element = client.call("ui_get_element", target="AddItemButton")
    data = _valid(tools, "ui_get_element", element)
    assert data["id"] == "AddItemButton" and data["enabled"] is True
    assert "value" in data  # every field present, null included...
    assert "value" not in element.data  # ...while the text stays compact

    windows = _valid(tools, "ui_list_windows", client.call("ui_list_windows"))
    assert [w["title"] for w in windows["windows"]] == ["Invoice Editor"]

    clicked = client.call("ui_click", target="AddItemButton", diff=True)
    action = _valid(tools, "ui_click", clicked)
    assert action["success"] is True and action["diff"]["appeared"], action
    assert clicked.data["windows"] == action["windows"]

    passed = _valid(
        tools, "ui_assert_enabled", client.call("ui_assert_enabled", target="AddItemButton")
    )
    assert passed["passed"] is True and "passed" in passed["message"]
    failed = client.call("ui_assert_text", target="TotalLabel", expected="Total: 1.00")
    assert failed.error  # a failed assertion is an error answer, with its structured body
    assert _valid(tools, "ui_assert_text", failed)["passed"] is False

    waited = _valid(tools, "ui_wait_for", client.call("ui_wait_for", target="TotalLabel",
                                                      condition="visible"))  # fmt: skip
    assert waited["success"] is True

    cell = _valid(tools, "ui_get_cell", client.call("ui_get_cell", table="ItemsTable", row=0,
                                                    column=0))  # fmt: skip
    assert cell["row"] == 0 and cell["column"] == 0

    missing = client.call("ui_get_text", target="NoSuchElement")
    assert missing.error and missing.structured is None  # errors stay text


def test_properties_are_typed_json_values(ui: tuple[UIServerClient, dict[str, Any]]) -> None:
    client, tools = ui

    def value(prop: str, target: str = "AddItemButton") -> Any:
        got = client.call("ui_get_property", target=target, property=prop)
        assert not got.error, got
        data = _valid(tools, "ui_get_property", got)
        assert got.data == data  # the text is the same JSON, null kept
        return data["value"]

    assert value("enabled") is True
    assert isinstance(value("focused"), bool)
    bounds = value("bounds")
    assert isinstance(bounds, list) and len(bounds) == 4 and all(isinstance(n, int) for n in bounds)
    assert bounds[2] > 0 and bounds[3] > 0
    states = value("states")
    assert isinstance(states, list) and all(isinstance(s, str) for s in states)
    assert isinstance(value("child_count"), int)
    assert value("row") is None  # not a table cell: null, not the string "None"
    assert value("name") == "Add item"
    unknown = client.call("ui_get_property", target="AddItemButton", property="no_such_thing")
    assert unknown.error and "unknown property" in unknown.text


def test_trees_and_screenshots_are_resources(ui: tuple[UIServerClient, dict[str, Any]]) -> None:
    client, tools = ui
    tree = client.call("ui_tree")
    data = _valid(tools, "ui_tree", tree)
    path = Path(data["path"])
    assert tree.links == [data["uri"]] and data["uri"].startswith("loopkit-ui://output/tree-")
    assert "uri" not in tree.data  # the text a model reads is as before
    (contents,) = client.read_resource(data["uri"])
    assert contents.mime_type == "text/plain"
    assert contents.text == path.read_text(encoding="utf-8")
    assert "#AddItemButton" in contents.text

    json_tree = _valid(tools, "ui_tree", client.call("ui_tree", format="json"))
    (contents,) = client.read_resource(json_tree["uri"])
    assert contents.mime_type == "application/json" and '"nodes"' in contents.text

    shot = client.call("ui_screenshot")
    data = _valid(tools, "ui_screenshot", shot)
    assert shot.links == [data["uri"]]
    (contents,) = client.read_resource(data["uri"])
    assert contents.mime_type == "image/png"
    png = base64.b64decode(contents.blob)
    assert png.startswith(b"\x89PNG") and png == Path(data["path"]).read_bytes()

    # Only what the server wrote: no other file of the machine is a resource.
    for uri in ("loopkit-ui://output/../../etc/passwd", "loopkit-ui://output/nothing.txt",
                "file:///etc/passwd"):  # fmt: skip
        with pytest.raises(Exception, match=r"(?i)unknown|not found|invalid"):
            client.read_resource(uri)
