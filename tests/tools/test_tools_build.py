"""build_app and run_tests: real commands, condensed output, timeouts that leave nothing behind."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from tests.installed import unavailable
from tools_helpers import Workspace, tool_by_name

from loopkit.abstractions import ToolError
from loopkit_tools import LocalTools, ReadyCheck, ToolsConfig, condense, pid_alive

pytestmark = pytest.mark.integration

EXAMPLE_APP = Path(__file__).resolve().parents[2] / "examples" / "invoice_app"


def package_root(tmp_path: Path, bad: bool) -> Path:
    app = tmp_path / "invoice_app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "good.py").write_text("def ok():\n    return 1\n")
    if bad:
        (app / "bad.py").write_text("def fine():\n    pass\ndef broken(:\n    return 2\n")
    return tmp_path


def compileall_config(root: Path, **extra: object) -> ToolsConfig:
    return ToolsConfig.model_validate(
        {
            "root": root,
            "read_folders": [],
            "build_command": [sys.executable, "-m", "compileall", "-q", "invoice_app"],
            "app_ready": None,
            **extra,
        }
    )


async def test_failing_build_names_the_error_line(tmp_path: Path) -> None:
    local = LocalTools(compileall_config(package_root(tmp_path, bad=True)))
    text = await tool_by_name(local, "build_app").invoke({})
    lines = text.splitlines()
    assert lines[0] == "Build failed with exit code 1."
    assert any('bad.py", line 3' in line for line in lines), text
    assert any("SyntaxError" in line for line in lines), text
    assert not any("good.py" in line for line in lines)
    assert len(lines) == len(set(lines))


async def test_successful_build(tmp_path: Path) -> None:
    local = LocalTools(compileall_config(package_root(tmp_path, bad=False)))
    assert await local.build_app() == "Build succeeded."


async def test_build_timeout_stops_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(p.pid))
        print("compiling...", flush=True)
        time.sleep(600)
        """
    )
    cfg = compileall_config(
        package_root(tmp_path, bad=False),
        build_command=[sys.executable, "-c", code],
        build_timeout_s=1.5,
    )
    text = await LocalTools(cfg).build_app()
    assert text.startswith("Build timed out after 1.5 s and was stopped.")
    assert not pid_alive(int(pid_file.read_text()))


async def test_output_is_deduplicated_and_capped(tmp_path: Path) -> None:
    code = (
        "for i in range(100):\n"
        "    print(f'mod.py:{i}: error: undefined name x{i}')\n"
        "    print('mod.py:1: warning: unused import')\n"
        "    print('noise line', i)\n"
        "raise SystemExit(2)\n"
    )
    cfg = compileall_config(
        tmp_path, build_command=[sys.executable, "-c", code], max_output_lines=5
    )
    lines = (await LocalTools(cfg).build_app()).splitlines()
    assert lines[0] == "Build failed with exit code 2."
    assert lines[1:6] == [
        "mod.py:0: error: undefined name x0",
        "mod.py:1: warning: unused import",
        "mod.py:1: error: undefined name x1",
        "mod.py:2: error: undefined name x2",
        "mod.py:3: error: undefined name x3",
    ]
    assert lines[6] == "[... 96 more error/warning lines not shown; fix these first]"
    assert len(lines) == 7


def test_condense_strips_colour_and_cuts_long_lines() -> None:
    out = "\x1b[31merror\x1b[0m: boom\n" + "warning " + "w" * 1000 + "\nall fine\n"
    lines = condense("S", out, 10).splitlines()
    assert lines[:2] == ["S", "error: boom"]
    assert lines[2].endswith(" [...]") and len(lines[2]) < 320
    assert len(lines) == 3


async def test_build_refused_while_the_app_runs(tmp_path: Path) -> None:
    cfg = compileall_config(
        package_root(tmp_path, bad=False),
        app_command=[sys.executable, "-c", "import time; time.sleep(600)"],
    )
    async with LocalTools(cfg) as local:
        await local.start_app()
        with pytest.raises(ToolError, match="call stop_app first"):
            await tool_by_name(local, "build_app").invoke({})
        await local.stop_app()
        assert await local.build_app() == "Build succeeded."


async def test_run_tests_only_when_configured(tmp_path: Path) -> None:
    root = package_root(tmp_path, bad=False)
    assert "run_tests" not in [t.name for t in LocalTools(compileall_config(root)).tools]
    (root / "test_mod.py").write_text(
        "def test_ok():\n    assert 1\n\ndef test_total():\n    assert 1 + 1 == 3, 'total wrong'\n"
    )
    cfg = compileall_config(
        root,
        test_command=[
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_mod.py",
        ],
    )
    local = LocalTools(cfg)
    assert [t.name for t in local.tools][-1] == "run_tests"
    text = await tool_by_name(local, "run_tests").invoke({})
    assert text.splitlines()[0] == "Tests failed with exit code 1."
    assert "FAILED test_mod.py::test_total - AssertionError: total wrong" in text
    assert "test_ok" not in text


def test_every_description_says_when_to_call_it(workspace: Workspace) -> None:
    tools = {t.name: t.description for t in LocalTools(workspace.config()).tools}
    assert list(tools) == [
        "list_files",
        "search_files",
        "read_file",
        "write_file",
        "edit_file",
        "build_app",
        "start_app",
        "stop_app",
        "git_commit",
    ]
    assert "Call stop_app first" in tools["build_app"]
    assert "invoice_app/" in tools["write_file"] and "COMPLETE" in tools["write_file"]
    assert "invoice_app/, docs/" in tools["list_files"]
    assert "card: " in tools["git_commit"] and "'^card: .+'" in tools["git_commit"]
    assert "before build_app" in tools["stop_app"]


async def test_demo_defaults_against_the_real_invoice_app(tmp_path: Path) -> None:
    """The defaults fit the demo: default build command reports the planted error's line."""
    if not EXAMPLE_APP.is_dir():
        unavailable(f"the example invoice app is not at {EXAMPLE_APP}")
    shutil.copytree(
        EXAMPLE_APP, tmp_path / "invoice_app", ignore=shutil.ignore_patterns("__pycache__")
    )
    cfg = ToolsConfig(
        root=tmp_path,
        app_env={"QT_QPA_PLATFORM": "offscreen"},
        app_ready=ReadyCheck(kind="delay", delay_s=1.0),
        stop_grace_s=3,
    )
    async with LocalTools(cfg) as local:
        assert (await local.build_app()).startswith("Build succeeded.")
        model = tmp_path / "invoice_app" / "model.py"
        lines = model.read_text().splitlines()
        lines.append("def broken(:")
        write = next(t for t in local.tools if t.name == "write_file")
        await write.invoke({"path": "invoice_app/model.py", "content": "\n".join(lines)})
        text = await local.build_app()
        assert text.startswith("Build failed with exit code 1."), text
        # the error line, relative to the workspace (no absolute paths for the model to read)
        assert f"\ninvoice_app/model.py:{len(lines)}: error:" in text, text
        assert str(tmp_path) not in text
        model.write_text("\n".join(lines[:-1]) + "\n")
        started = await local.start_app()
        assert "running" in started and local.app_pid is not None
        pid = local.app_pid
    assert not pid_alive(pid)
