"""The UI server through a second MCP client implementation nobody here wrote: the MCP
TypeScript SDK's ``Client`` (the library under the MCP Inspector), driven by
``outside_client/drive.mjs`` over stdio and over HTTP with the bearer token. It lists the
tools, calls every one of them against the real invoice app (launched by the server, so
``ui_restart_app`` works too), reads every resource the answers link, and each structured answer
is validated against its tool's outputSchema twice: by the SDK itself (Ajv) and here
(jsonschema). Over HTTP a resource read without the token is refused."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

import loopkit
from loopkit_ui.headless_desktop import HeadlessDesktop
from tests.installed import unavailable

from . import http_probe as hp
from .conftest import EXAMPLES_DIR, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]

CLIENT_DIR = Path(__file__).resolve().parent / "outside_client"

# Every tool once (some twice), in an order that works on the invoice app.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ui_start_recording", {"max_seconds": 120}),
    ("ui_list_windows", {}),
    ("ui_tree", {}),
    ("ui_tree", {"format": "json"}),
    ("ui_missing_ids", {}),
    ("ui_get_element", {"target": "AddItemButton"}),
    ("ui_get_text", {"target": "TotalLabel"}),
    ("ui_get_property", {"target": "AddItemButton", "property": "bounds"}),
    ("ui_get_property", {"target": "AddItemButton", "property": "row"}),
    ("ui_get_cell", {"table": "ItemsTable", "row": 0, "column": 0}),
    ("ui_hover", {"target": "AddItemButton"}),
    ("ui_click", {"target": "AddItemButton", "diff": True}),
    ("ui_double_click", {"target": "ItemsTable", "row": 0, "column": 0}),
    ("ui_press_keys", {"keys": "Escape"}),
    ("ui_right_click", {"target": "TotalLabel"}),
    ("ui_press_keys", {"keys": "Escape"}),
    ("ui_type_text", {"target": "DiscountInput", "text": "10"}),
    ("ui_select_item", {"target": "ItemsTable", "item": "#0"}),
    ("ui_drag_and_drop", {"source": "AddItemButton", "target": "TotalLabel"}),
    ("ui_set_cell", {"table": "ItemsTable", "row": 0, "column": 0, "text": "Design"}),
    ("ui_assert_exists", {"target": "TotalLabel"}),
    ("ui_assert_visible", {"target": "TotalLabel"}),
    ("ui_assert_enabled", {"target": "AddItemButton"}),
    ("ui_assert_value", {"target": "DiscountInput", "expected": "10"}),
    ("ui_assert_text", {"target": "TotalLabel", "expected": "Total", "match": "contains"}),
    ("ui_assert_text", {"target": "TotalLabel", "expected": "no such total"}),
    ("ui_wait_for", {"target": "TotalLabel", "condition": "visible"}),
    ("ui_snapshot", {}),
    ("ui_get_element", {"target": "e1"}),  # the first ref of the snapshot: the main window
    ("ui_set_text", {"target": "FilePathInput", "text": "x" * 3000}),
    ("ui_type_text", {"target": "FilePathInput", "text": "y" * 600}),  # 3 chunks, with progress
    ("ui_click_at", {"x": 3, "y": 300}),
    ("ui_drag_at", {"x": 3, "y": 300, "to_x": 6, "to_y": 300}),
    ("ui_scroll", {"target": "ItemsTable", "direction": "down", "amount": 1}),
    ("ui_scroll_into_view", {"target": "New item"}),  # the row ui_click added
    ("ui_window", {"action": "focus"}),
    ("ui_set_clipboard", {"text": "from the outside client"}),
    ("ui_get_clipboard", {}),
    (
        "ui_run_steps",
        {
            "steps": [
                {"tool": "ui_get_text", "arguments": {"target": "TotalLabel"}},
                {"tool": "ui_click", "arguments": {"target": "AddItemButton"}},
            ]
        },
    ),
    ("ui_screenshot", {}),
    ("ui_screenshot", {"window": "Invoice Editor", "image": True}),
    ("ui_list_apps", {}),
    ("ui_launch_app", {"app": "second"}),
    ("ui_list_windows", {"all_apps": True}),
    ("ui_attach_app", {"app_name": "invoice_app"}),
    ("ui_stop_recording", {}),
    ("ui_restart_app", {}),
    ("ui_get_text", {"target": "TotalLabel"}),
]
# Calls whose outcome depends on the app, not on the protocol (an error answer is fine there).
MAY_FAIL = {"ui_double_click", "ui_right_click", "ui_press_keys", "ui_select_item",
            "ui_drag_and_drop", "ui_set_cell"}  # fmt: skip
FAILS = {("ui_assert_text", "no such total")}  # a failed assertion: an error with its body


@pytest.fixture(scope="module")
def node() -> str:
    program = shutil.which("node")
    if program is None:
        unavailable("node is not installed (the outside MCP client runs on Node.js)")
    if not (CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        unavailable(
            f"the MCP TypeScript SDK is not installed in {CLIENT_DIR} (scripts/setup.sh --tests "
            "runs npm ci there)"
        )
    return program


def _drive(node: str, plan: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    plan_file = tmp_path / f"plan-{secrets.token_hex(4)}.json"
    plan_file.write_text(json.dumps({**plan, "calls": [
        {"name": name, "arguments": args} for name, args in CALLS
    ]}))  # fmt: skip
    done = subprocess.run([node, str(CLIENT_DIR / "drive.mjs"), str(plan_file)], cwd=CLIENT_DIR,
                          capture_output=True, text=True, timeout=240, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stdout, f"the client failed:\n{done.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    assert "fatal" not in report, f"{report['fatal']}\n{done.stderr[-3000:]}"
    return report


def _check(report: dict[str, Any]) -> None:
    assert report["serverInfo"]["name"] == "loopkit-ui"
    assert report["serverInfo"]["version"] == loopkit.__version__
    tools = {tool["name"]: tool for tool in report["tools"]}
    assert {name for name, _ in CALLS} == set(tools), "call every tool the server lists"
    for tool in tools.values():
        assert tool["title"] and tool["annotations"]["title"] == tool["title"], tool["name"]
        assert isinstance(tool["annotations"]["readOnlyHint"], bool), tool["name"]
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
    for call in report["calls"]:
        name, args = call["name"], call["arguments"]
        assert "clientError" not in call, (name, args, call.get("clientError"))
        texts = [b["text"] for b in call["content"] if b["type"] == "text"]
        assert texts and texts[0], (name, call)  # text for clients that read text
        expected_failure = (name, args.get("expected")) in FAILS
        if name not in MAY_FAIL:
            assert call["isError"] is expected_failure, (name, args, texts)
        if call["structuredContent"] is not None:
            jsonschema.Draft202012Validator(tools[name]["outputSchema"]).validate(
                call["structuredContent"]
            )
        else:
            assert call["isError"], f"{name} answered no structured content: {texts}"
    by_name = {c["name"]: c for c in report["calls"]}
    properties = [c["structuredContent"] for c in report["calls"] if c["name"] == "ui_get_property"]
    assert len(properties[0]["value"]) == 4 and properties[1] == {"property": "row", "value": None}
    stopped = by_name["ui_stop_recording"]["structuredContent"]
    assert stopped["ended"] == "stopped" and stopped["size_bytes"] > 0
    assert by_name["ui_restart_app"]["structuredContent"]["pid"] > 0
    assert report["calls"][-1]["content"][0]["text"] == "Total: 250.00"  # the fresh app
    # A screenshot for a vision model: the PNG itself as image content, beside the link.
    shots = [c for c in report["calls"] if c["name"] == "ui_screenshot"]
    images = [b for c in shots for b in c["content"] if b["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png", shots
    assert base64.b64decode(images[0]["data"]).startswith(b"\x89PNG")
    # Every action answers a snapshot with refs; the first the whole outline.
    clicked = by_name["ui_click"]["structuredContent"]
    assert any("[ref=e" in line for line in clicked["snapshot"]), clicked
    typed = [c for c in report["calls"] if c["name"] == "ui_type_text"][-1]
    # The last notification (600 of 600) is written just before the result; the Node SDK
    # handles notifications a microtask later than responses, so on a loaded machine it may
    # drop that one (modelcontextprotocol/typescript-sdk#2580, a race servers cannot avoid).
    seen = [(p["progress"], p["total"]) for p in typed["progress"]]
    assert seen in ([(250, 600), (500, 600), (600, 600)], [(250, 600), (500, 600)]), typed
    steps = by_name["ui_run_steps"]["structuredContent"]
    assert steps["success"] and steps["ran"] == 2, steps
    assert by_name["ui_get_clipboard"]["content"][0]["text"] == "from the outside client"
    apps = by_name["ui_attach_app"]["structuredContent"]
    assert apps["current"] == "invoice_app" and apps["attached"] == ["invoice_app", "second"]
    others = by_name["ui_list_windows"]  # the last one: all apps, the second invoice app's too
    assert any(w.get("app") for w in others["structuredContent"]["windows"]), others
    kinds = set()
    for resource in report["resources"]:
        assert "clientError" not in resource, resource
        assert resource["size"] > 0, resource
        kinds.add(resource["mimeType"])
    assert kinds == {"text/plain", "application/json", "image/png", "video/mp4"}


def _server_args(out: Path) -> list[str]:
    return ["-m", "loopkit_ui.server", "--launch", f"{PYTHON} -m invoice_app", "--launch-cwd",
            str(EXAMPLES_DIR), "--attach-timeout", "20", "--output-dir", str(out),
            "--launchable", f"second={PYTHON} -m invoice_app"]  # fmt: skip


def test_stdio(node: str, headless_desktop: HeadlessDesktop, tmp_path: Path) -> None:
    env = {**os.environ, **headless_desktop.child_env()}
    plan = {"transport": "stdio", "command": PYTHON, "args": _server_args(tmp_path / "out"),
            "env": env}  # fmt: skip
    _check(_drive(node, plan, tmp_path))


@contextlib.contextmanager
def _http_server(env: dict[str, str], args: list[str], log: Path) -> Iterator[tuple[str, int]]:
    with log.open("w") as errors:
        process = subprocess.Popen([PYTHON, *args], env=env, stdout=subprocess.PIPE,
                                   stderr=errors, text=True)  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:"), log.read_text()
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(20)


def test_http_with_the_token(node: str, headless_desktop: HeadlessDesktop, tmp_path: Path) -> None:
    folder = tmp_path / "secret"
    folder.mkdir(mode=0o700)
    token_path = folder / "token"
    token = secrets.token_urlsafe(32)
    token_path.write_text(token + "\n")
    token_path.chmod(0o600)
    args = [*_server_args(tmp_path / "out"), "--http", "127.0.0.1:0", "--token-file",
            str(token_path)]  # fmt: skip
    env = {**os.environ, **headless_desktop.child_env()}
    with _http_server(env, args, tmp_path / "server.log") as (url, _pid):
        report = _drive(node, {"transport": "http", "url": url, "token": token}, tmp_path)
        _check(report)
        # The resources go through the same bearer-token check as the tools.
        parts = urlsplit(url)
        assert parts.hostname and parts.port
        target = hp.Target(parts.hostname, parts.port, parts.netloc)
        uri = report["resources"][0]["uri"]
        for auth in ({}, hp.bearer("wrong-" + token[6:]), hp.bearer(token)):
            reply = _read_resource(target, uri, auth)
            if auth.get("Authorization") == f"Bearer {token}":
                assert reply.status == 200 and reply.json()["result"]["contents"], reply
            else:
                assert reply.status == 401 and b"contents" not in reply.body, reply


def _read_resource(target: hp.Target, uri: str, auth: dict[str, str]) -> hp.Reply:
    """One stateless ``resources/read`` POST."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": hp.MODERN, "Mcp-Method": "resources/read",
               "Mcp-Name": uri, **auth}  # fmt: skip
    meta = {"io.modelcontextprotocol/protocolVersion": hp.MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 3, "method": "resources/read",
            "params": {"uri": uri, "_meta": meta}}  # fmt: skip
    return hp.send(target, "POST", host=target.host, headers=headers, body=body)
