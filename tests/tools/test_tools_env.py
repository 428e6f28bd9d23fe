"""Child processes get an allowlisted environment: no key reaches a build, the app, tests, a
readiness check or git, while PATH, the display, Qt and the configured passthrough do."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from tests.secret_corpus import ENVIRONMENT, leaks
from tools_helpers import git

from loopkit.child_env import child_environment
from loopkit_tools import LocalTools, ToolsConfig
from loopkit_tools.config import ReadyCheck
from loopkit_tools.processes import run_command

pytestmark = pytest.mark.integration

PY = sys.executable
# Writes its whole environment to the file named by its last argument and prints it.
DUMP = (
    "import json, os, sys\n"
    "open(sys.argv[-1], 'w').write(json.dumps(dict(os.environ)))\n"
    "print('\\n'.join(f'{k}={v}' for k, v in os.environ.items()))\n"
)
KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "Zq9" * 30,
    "OPENAI_API_KEY": "sk-proj-" + "Wx7" * 16,
    "MY_SERVICE_TOKEN": "service-token-123456",
    "GITHUB_PAT": "github_pat_" + "Ab1" * 25,
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    # Not a secret-looking name, but its URL holds the database's password.
    "LOOPKIT_DATABASE_URL": "postgresql://loopkit:db-pass-7Hq2x9@db.example/loopkit",
}
NEEDED = {
    "DISPLAY": ":99",
    "QT_QPA_PLATFORM": "xcb",
    "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
    "XDG_RUNTIME_DIR": "/tmp/runtime-test",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/bus",
    "AT_SPI_BUS_ADDRESS": "unix:path=/tmp/a11y",
    "LC_ALL": "C.UTF-8",
    "LOOPKIT_UI_OUTPUT_DIR": "/tmp/ui-out",
}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in [*KEYS.items(), *ENVIRONMENT]:
        monkeypatch.setenv(name, value)
    for name, value in NEEDED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("UNRELATED_SETTING", "not on the list")


def _secrets() -> list[str]:
    return [*KEYS.values(), *(v for _, v in ENVIRONMENT)]


def _check(env: dict[str, str], where: str) -> None:
    got_keys = sorted(set(env) & ({*KEYS} | {n for n, _ in ENVIRONMENT}))
    leaked = leaks(json.dumps(env), _secrets())
    print(f"{where}: secret variables tried {len(KEYS) + len(ENVIRONMENT)}, leaked {len(got_keys)}")
    assert got_keys == [] and leaked == [], (got_keys, leaked)
    assert "UNRELATED_SETTING" not in env
    for name, value in NEEDED.items():
        assert env.get(name) == value, name
    assert env["PATH"] == os.environ["PATH"]
    if "PYTHONPATH" in os.environ:  # the tests' own src/ first must reach children
        assert env["PYTHONPATH"] == os.environ["PYTHONPATH"]


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "invoice_app").mkdir()
    (tmp_path / "invoice_app" / "main.py").write_text("A = 1\n")
    return tmp_path


async def test_build_and_tests_that_print_their_environment_show_no_key(
    tmp_path: Path, secret_env: None
) -> None:
    root = _repo(tmp_path)
    config = ToolsConfig(
        root=root,
        app_ready=None,
        build_command=[PY, "-c", DUMP, str(tmp_path / "build-env.json")],
        test_command=[PY, "-c", DUMP, str(tmp_path / "test-env.json")],
        max_output_lines=1000,
    )
    async with LocalTools(config) as tools:
        build_output = await tools.build_app()
        test_output = await tools.run_tests()
    assert build_output.startswith("Build succeeded.")
    assert leaks(build_output + test_output, _secrets()) == []
    _check(json.loads((tmp_path / "build-env.json").read_text()), "build")
    _check(json.loads((tmp_path / "test-env.json").read_text()), "tests")


async def test_the_app_and_its_readiness_check_cannot_read_a_key(
    tmp_path: Path, secret_env: None
) -> None:
    root = _repo(tmp_path)
    app_env_file = tmp_path / "app-env.json"
    probe_env_file = tmp_path / "probe-env.json"
    app = DUMP + "import time\ntime.sleep(60)\n"
    probe = DUMP + f"sys.exit(0 if os.path.exists({str(app_env_file)!r}) else 1)\n"
    config = ToolsConfig(
        root=root,
        app_command=[PY, "-c", app, str(app_env_file)],
        app_env={"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "GIVEN_BY_CONFIG_TOKEN": "given-1234"},
        app_ready=ReadyCheck(
            kind="command", command=[PY, "-c", probe, str(probe_env_file)], timeout_s=20
        ),
    )
    async with LocalTools(config) as tools:
        started = await tools.start_app()
        assert "running" in started
        await tools.stop_app()
    app_env = json.loads(app_env_file.read_text())
    _check(app_env, "app")
    # a value the configuration gives by name is set, whatever its name looks like
    assert app_env["GIVEN_BY_CONFIG_TOKEN"] == "given-1234"
    _check(json.loads(probe_env_file.read_text()), "readiness check")


async def test_git_gets_no_key(tmp_path: Path, secret_env: None) -> None:
    root = _repo(tmp_path)
    git(root, "init", "-q")
    git(root, "config", "user.name", "T")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "invoice_app" / "main.py").write_text("A = 2\n")
    env_file = tmp_path / "git-env.json"
    # a git that records its environment, then runs the real git
    wrapper = (
        f"import json, os, sys\nopen({str(env_file)!r}, 'a').write(json.dumps(dict(os.environ)) "
        "+ '\\n')\nos.execvp('git', ['git', *sys.argv[1:]])\n"
    )
    config = ToolsConfig(root=root, app_ready=None, git_command=[PY, "-c", wrapper])
    await LocalTools(config).git_commit("card: change A")
    runs = [json.loads(line) for line in env_file.read_text().splitlines()]
    assert len(runs) >= 3  # add, diff, commit, ...
    for env in runs:
        assert set(env) & ({*KEYS} | {n for n, _ in ENVIRONMENT}) == set()
        assert leaks(json.dumps(env), _secrets()) == []
    print(f"git: {len(runs)} runs, secret variables tried {len(KEYS) + len(ENVIRONMENT)}, leaked 0")


async def test_passthrough_names_and_patterns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INVOICE_APP_SYSLOG", "/dev/log")
    monkeypatch.setenv("INVOICE_APP_API_TOKEN", "pattern-does-not-pass-it")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "named-exactly-passes")
    monkeypatch.setenv("OTHER_SETTING", "not passed")
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    result = await run_command(
        [PY, "-c", script],
        cwd=tmp_path,
        env={"EXPLICIT": "1"},
        timeout_s=30,
        passthrough=["INVOICE_APP_*", "MY_SERVICE_TOKEN"],
    )
    env = json.loads(result.output)
    assert env["INVOICE_APP_SYSLOG"] == "/dev/log"
    assert "INVOICE_APP_API_TOKEN" not in env  # secret-looking: only an exact name passes it
    assert env["MY_SERVICE_TOKEN"] == "named-exactly-passes"
    assert "OTHER_SETTING" not in env
    assert env["EXPLICIT"] == "1"


def test_child_environment_rules() -> None:
    environ = {
        "PATH": "/bin",
        "PATTERN": "x",
        "LC_TIME": "C",
        "QT_SCALE_FACTOR": "2",
        "QT_SECRET_KEY": "qt-secret-value",
        "LOOPKIT_MODEL": "m",
        "LOOPKIT_API_KEY": "k" * 20,
        "LOOPKIT_DATABASE_URL": "postgresql://u:pw@db/x",
        "XDG_DATA_DIRS": "/usr/share",
        "GIT_EXTERNAL_DIFF": "evil",
        "LD_PRELOAD": "/tmp/evil.so",
        "BASH_FUNC_x%%": "() { :; }",
    }
    assert child_environment(environ=environ) == {
        "PATH": "/bin",
        "LC_TIME": "C",
        "QT_SCALE_FACTOR": "2",
        "LOOPKIT_MODEL": "m",
        "XDG_DATA_DIRS": "/usr/share",
    }
    assert child_environment(["QT_SECRET_KEY"], environ=environ)["QT_SECRET_KEY"] == (
        "qt-secret-value"
    )
    # the database URL only where a child is given it by name, never through LOOPKIT_*
    named = child_environment(["LOOPKIT_DATABASE_URL"], environ=environ)
    assert named["LOOPKIT_DATABASE_URL"] == "postgresql://u:pw@db/x"
    assert "LOOPKIT_DATABASE_URL" not in child_environment(["LOOPKIT_*"], environ=environ)


@pytest.mark.parametrize("entry", ["", "A=B", "HAS SPACE", " LEADING", "NUL\x00"])
def test_bad_passthrough_entries_are_refused(tmp_path: Path, entry: str) -> None:
    with pytest.raises(ValueError, match="env passthrough entry"):
        ToolsConfig(root=tmp_path, env_passthrough=[entry])
