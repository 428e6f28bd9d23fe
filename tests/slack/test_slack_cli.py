"""``python -m loopkit_board.slack`` with bad input: exit status 2, one line naming the input,
no traceback, nothing connected, and a token given in the wrong shape never echoed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slack.conftest import ROOT
from tests.slack.fake_slack import APP_TOKEN, BOT_TOKEN

GOOD = 'allowed_users = ["U0ALICE"]\n'
WRONG_SHAPE = "xoxp-9999999999-user-token-not-a-bot-token"


def run(tmp_path: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    full.update(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_APP_TOKEN": APP_TOKEN,
            "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        }
    )
    full.update(env)
    full = {k: v for k, v in full.items() if v != "<unset>"}
    return subprocess.run(
        [sys.executable, "-m", "loopkit_board.slack", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("config", "env", "names"),
    [
        (None, {}, "--config"),
        ("missing", {}, "cannot read it"),
        ("allowed_users = [", {}, "not valid TOML"),
        ("", {}, "allowed_users"),
        ("allowed_users = []", {}, "allowed_users"),
        ('allowed_users = ["alice"]', {}, "'alice' is not a Slack user id"),
        (GOOD + "progress_interval = 0\n", {}, "progress_interval"),
        (GOOD + "colour = 'red'\n", {}, "colour"),
        (GOOD + 'runner_config = "no-such.toml"\n', {}, "no-such.toml"),
        (GOOD, {"SLACK_BOT_TOKEN": "<unset>"}, "SLACK_BOT_TOKEN"),
        (GOOD, {"SLACK_BOT_TOKEN": WRONG_SHAPE}, "SLACK_BOT_TOKEN"),
        (GOOD, {"SLACK_APP_TOKEN": "<unset>"}, "SLACK_APP_TOKEN"),
        (GOOD, {"SLACK_APP_TOKEN": BOT_TOKEN}, "SLACK_APP_TOKEN"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, config: str | None, env: dict[str, str], names: str
) -> None:
    args: list[str] = []
    if config == "missing":
        args = ["--config", str(tmp_path / "nope.toml")]
    elif config is not None:
        path = tmp_path / "bot.toml"
        path.write_text(config, encoding="utf-8")
        args = ["--config", str(path)]
    done = run(tmp_path, args, **env)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    lines = [line for line in done.stderr.splitlines() if not line.startswith("usage:")]
    assert len(lines) == 1 and "error" in lines[0] and names in lines[0], output
    assert "Traceback" not in output
    for secret in (BOT_TOKEN, APP_TOKEN, WRONG_SHAPE):
        assert secret not in output
    assert not (tmp_path / "runs").exists()  # nothing created
