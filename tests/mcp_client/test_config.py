"""MCPServerConfig: validation of what a TOML file may say, and connect() on a real server."""

from __future__ import annotations

import sys
import tomllib

import pytest
from pydantic import ValidationError

from loopkit.mcp import MCPClient, MCPServerConfig

from .helpers import SERVER_SCRIPT, process_state


def test_both_or_neither_transport_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match=r"exactly one of `command`.*or `url`.*both given"):
        MCPServerConfig(command=["python", "s.py"], url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValidationError, match=r"exactly one of `command`.*neither given"):
        MCPServerConfig()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"command": []}, "non-empty list"),
        ({"command": ["  "]}, "non-empty list"),
        ({"url": "ftp://x/mcp"}, "http:// or https://"),
        ({"url": "127.0.0.1:8000/mcp"}, "http:// or https://"),
        ({"url": "http://127.0.0.1:1/mcp", "env": {"A": "1"}}, "apply to a `command` server"),
        (
            {"url": "http://127.0.0.1:1/mcp", "env_passthrough": ["A"]},
            "apply to a `command` server",
        ),
        ({"command": ["x"], "env_passthrough": ["A=1"]}, "env passthrough entry 'A=1'"),
        ({"command": ["x"], "headers": {"A": "1"}}, "apply to a `url` server"),
        ({"command": ["x"], "call_timeout": 0}, "greater than 0"),
        ({"command": ["x"], "comand": ["y"]}, "Extra inputs are not permitted"),
    ],
)
def test_bad_fields_are_rejected_with_a_clear_message(
    fields: dict[str, object], expected: str
) -> None:
    with pytest.raises(ValidationError, match=expected):
        MCPServerConfig.model_validate(fields)


def test_secrets_stay_out_of_repr() -> None:
    config = MCPServerConfig(url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer s3"})
    assert "s3" not in repr(config)
    config = MCPServerConfig(command=["x"], env={"API_KEY": "s3"})
    assert "s3" not in repr(config)


def test_toml_tables_become_clients() -> None:
    text = """
    [servers.ui]
    command = ["python", "-m", "loopkit_ui.server"]
    env = { QT_LINUX_ACCESSIBILITY_ALWAYS_ON = "1" }
    inherit_env = true
    call_timeout = 30
    tool_prefix = "ui_"

    [servers.search]
    url = "http://127.0.0.1:8931/mcp?key=abc"
    headers = { Authorization = "Bearer abc" }
    """
    tables = tomllib.loads(text)["servers"]
    configs = {name: MCPServerConfig.model_validate(t) for name, t in tables.items()}
    ui = configs["ui"].connect()
    assert isinstance(ui, MCPClient)
    assert ui.label == "python -m loopkit_ui.server"
    assert ui.call_timeout == 30 and ui.tool_prefix == "ui_"
    search = configs["search"].connect()
    assert search.label == "http://127.0.0.1:8931/mcp"  # no query string: it may hold a key


@pytest.mark.integration
async def test_connect_reaches_a_real_stdio_server() -> None:
    config = MCPServerConfig(
        name="test-server",
        command=[sys.executable, str(SERVER_SCRIPT), "stdio"],
        cwd=SERVER_SCRIPT.parent,
        tool_prefix="t_",
        startup_timeout=60,
    )
    async with config.connect() as server:
        assert server.label == "test-server"
        tools = {t.name: t for t in await server.list_tools()}
        assert await tools["t_echo"].invoke({"text": "via config"}) == "via config"
        pid = int(await tools["t_pid"].invoke({}))
    assert process_state(pid) is None
