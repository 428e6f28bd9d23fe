"""ToolsConfig: demo defaults, TOML round trip, clear errors for bad values."""

from __future__ import annotations

import sys
import tomllib

import pytest
from pydantic import ValidationError

from loopkit_tools import ToolsConfig


def test_demo_defaults() -> None:
    cfg = ToolsConfig()
    assert cfg.read_folders == ["invoice_app", "docs"] and cfg.write_folders == ["invoice_app"]
    assert cfg.build_command == [sys.executable, "-m", "invoice_app.build"]
    assert cfg.app_command == [sys.executable, "-m", "invoice_app"]
    assert cfg.commit_message_pattern == r"^card: .+"
    assert cfg.app_env["QT_LINUX_ACCESSIBILITY_ALWAYS_ON"] == "1"


def test_from_a_runner_toml_tools_table() -> None:
    text = """
    [tools]
    root = "/tmp/repo"
    write_folders = ["src/InvoiceApp/"]
    read_folders = ["src", "docs/rules"]
    build_command = ["python", "-m", "compileall", "src"]
    app_env = { DISPLAY = ":99" }
    app_ready = { kind = "file", path = "ready.flag", timeout_s = 10 }
    stop_grace_s = 2
    """
    cfg = ToolsConfig.model_validate(tomllib.loads(text)["tools"])
    assert cfg.write_folders == ["src/InvoiceApp"]
    assert cfg.app_env == {"DISPLAY": ":99"}
    assert cfg.app_ready is not None and cfg.app_ready.path == "ready.flag"


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"write_folders": ["../up"]}, "must not contain '..'"),
        ({"read_folders": ["/etc"]}, "must be relative to root"),
        ({"write_folders": [".git"]}, "the .git folder can never"),
        ({"write_folders": []}, "write_folders is empty"),
        ({"build_command": []}, "non-empty argv list"),
        ({"commit_message_pattern": "card: ("}, "is not a valid regex"),
        ({"app_ready": {"kind": "file"}}, "needs 'path'"),
        ({"app_ready": {"kind": "command"}}, "needs 'command'"),
        ({"app_ready": {"kind": "window"}}, "needs 'app_name'"),
        ({"bogus": 1}, "bogus"),
        ({"max_file_bytes": 0}, "max_file_bytes"),
    ],
)
def test_bad_values_are_named(values: dict[str, object], needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        ToolsConfig.model_validate(values)
    assert needle in str(info.value)
