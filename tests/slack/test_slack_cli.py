"""``python -m loopkit_board.slack`` with bad input: exit status 2, one line naming the input,
no traceback, nothing connected, and a token given in the wrong shape never echoed. With Slack
out of reach at start: tried again with a growing pause, one log line a try, a signal stops it
with 130, and a Slack that comes up late is reached."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.slack.conftest import ALLOWED, ROOT, bot_env
from tests.slack.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack

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
        (GOOD + 'data_dir = "bot.toml"\n', {}, "data_dir (the bot's config)"),
        (GOOD + 'data_dir = "no/such"\n', {}, "does not exist"),
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"no {text!r} in the log:\n{log.read_text()}"
        time.sleep(0.1)


def _start(tmp_path: Path, port: int) -> tuple[subprocess.Popen[bytes], Path]:
    config = tmp_path / "bot.toml"
    config.write_text(
        f'allowed_users = ["{ALLOWED}"]\nslack_api_url = "http://127.0.0.1:{port}/api/"\n'
        'cards_dir = "cards"\n',
        encoding="utf-8",
    )
    log = tmp_path / "bot.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "loopkit_board.slack", "--config", str(config)],
        cwd=ROOT, env=bot_env(tmp_path), stdout=subprocess.DEVNULL, stderr=log.open("w"),
    )  # fmt: skip
    return process, log


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_slack_out_of_reach_is_tried_again_one_line_a_try_and_a_signal_stops_it(
    tmp_path: Path, stop: signal.Signals
) -> None:
    process, log = _start(tmp_path, _free_port())  # nothing listens there
    try:
        _wait_for(log, "cannot reach Slack (try 3)", process)
        process.send_signal(stop)
        status = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    output = log.read_text()
    assert status == 130, output
    assert "Traceback" not in output
    tries = [line for line in output.splitlines() if "cannot reach Slack (try" in line]
    # one line a try, the pause doubling: 1 s, 2 s, 4 s, ...
    assert [re.search(r"try (\d+)\)", line).group(1) for line in tries] == [  # type: ignore[union-attr]
        str(n) for n in range(1, len(tries) + 1)
    ]
    assert "trying again in 1 s" in tries[0] and "trying again in 4 s" in tries[2]
    assert all(BOT_TOKEN not in line and APP_TOKEN not in line for line in output.splitlines())


def test_slack_coming_up_late_is_reached_and_serves(tmp_path: Path) -> None:
    port = _free_port()
    process, log = _start(tmp_path, port)
    try:
        _wait_for(log, "cannot reach Slack (try 2)", process)
        with FakeSlack(listen_port=port) as slack:
            slack.wait_for(lambda: slack.connections >= 1, "the bot's socket-mode connection")
            _wait_for(log, "reached Slack at try", process)
            ts = slack.send_message(ALLOWED, "hello there", channel="D0DIRECT")
            slack.wait_post(ts, "is not a role")
            process.send_signal(signal.SIGTERM)
            assert process.wait(30) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert "Traceback" not in log.read_text()
