"""Fixtures for the Slack bot's tests: the fake Slack and the bot as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.slack.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = "U0ALICE"


def _default_role() -> str:
    from loopkit.cards.config import RunnerConfig
    from loopkit_board.roles import available_roles

    return available_roles(RunnerConfig())[0]


#: The role the tests' commands use: the application's default one (``developer`` before the
#: role catalog, ``develop`` with it).
ROLE = _default_role()


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


def bot_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "LOOPKIT_RUNS_DIR": str(tmp_path / "runs"),
        "LOOPKIT_HEADLESS": "always",
        **extra,
    }
    for name in ("LOOPKIT_IN_HEADLESS_SESSION", "LOOPKIT_DATABASE_URL"):
        env.pop(name, None)
    return env


def write_bot_config(tmp_path: Path, slack: FakeSlack, **settings: object) -> Path:
    lines = [
        f'allowed_users = ["{ALLOWED}"]',
        f'slack_api_url = "{slack.api_url}"',
        'cards_dir = "cards"',
        "progress_interval = 0.5",
        "retry_interval = 0.5",
    ]
    for key, value in settings.items():
        lines.append(f"{key} = {value!r}".replace("'", '"'))
    path = tmp_path / "bot.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class BotProcess:
    """``python -m loopkit_board.slack`` as a child process, its stderr to a file."""

    def __init__(self, tmp_path: Path, slack: FakeSlack, config: Path, env: dict[str, str]):
        self.slack = slack
        self.log = tmp_path / f"bot-{slack.connections}.log"
        before = slack.connections
        self.process = subprocess.Popen(
            [sys.executable, "-m", "loopkit_board.slack", "--config", str(config)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("w"),
        )
        slack.wait_for(
            lambda: slack.connections > before or self.process.poll() is not None,
            "the bot's socket-mode connection",
        )
        assert self.process.poll() is None, self.log.read_text()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8")


@pytest.fixture
def start_bot(tmp_path: Path, slack: FakeSlack) -> Iterator[object]:
    started: list[BotProcess] = []

    def start(config: Path | None = None, **extra: str) -> BotProcess:
        bot = BotProcess(
            tmp_path, slack, config or write_bot_config(tmp_path, slack), bot_env(tmp_path, **extra)
        )
        started.append(bot)
        return bot

    yield start
    for bot in started:
        bot.stop()
