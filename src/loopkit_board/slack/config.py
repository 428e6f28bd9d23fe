"""The Slack bot's settings: a TOML file for what may be shared, the environment for the tokens.

```toml
allowed_users = ["U012ABCDEF"]        # Slack user ids allowed to start runs and ask questions
runner_config = "loopkit.toml"        # the card runs' settings (model, database, runs folder)
cards_dir = "cards"                   # where a card given as text is written
data_dir = "runs"                     # the threads' runs and chat sessions (default: the runs
                                      # folder; the board's chats.sqlite, the bot's slack.sqlite)
progress_interval = 4.0               # seconds between progress posts in a run's thread
chat_model = "anthropic/claude-sonnet-4-5"   # answers questions in a thread (default: the
                                      # runs' model; "offline" answers from the run log alone)
```

The tokens are never in the file (nor in a log): ``SLACK_BOT_TOKEN`` (``xoxb-``) and
``SLACK_APP_TOKEN`` (``xapp-``, with ``connections:write``) come from the environment.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loopkit.errors import describe_validation_error

__all__ = ["BotConfigError", "SlackBotConfig", "SlackTokens", "load_bot_config", "read_tokens"]


class BotConfigError(ValueError):
    """The bot's settings are wrong; the message names the input and what was expected."""


class SlackBotConfig(BaseModel):
    """What the bot runs with (paths relative to the config file's folder)."""

    model_config = ConfigDict(extra="forbid")

    #: Slack user ids (``U...``/``W...``) allowed to use the bot; everyone else is refused.
    allowed_users: list[str] = Field(min_length=1)
    #: The card runs' loopkit config (TOML); None: loopkit's defaults and ``LOOPKIT_*``.
    runner_config: Path | None = None
    #: Where a card given as text is written as a card file.
    cards_dir: Path = Path("cards")
    #: The folder of the bot's SQLite files (threads, chat sessions); None: the runs folder.
    data_dir: Path | None = None
    #: Seconds between two progress posts in a run's thread.
    progress_interval: float = Field(default=4.0, gt=0)
    #: Seconds before following a run is tried again when posting to Slack failed.
    retry_interval: float = Field(default=10.0, gt=0)
    #: The model answering questions in a thread (a litellm string, its endpoint the runner
    #: config's ``api_base``); None: the runs' model (``offline`` when that is scripted).
    chat_model: str | None = None
    #: Slack's Web API root; only tests change it (a fake Slack on 127.0.0.1).
    slack_api_url: str = "https://slack.com/api/"

    @field_validator("allowed_users")
    @classmethod
    def _user_ids(cls, users: list[str]) -> list[str]:
        for user in users:
            if not user or user[0] not in "UW" or not user.isalnum():
                raise ValueError(f"{user!r} is not a Slack user id (U or W, then letters/digits)")
        return users

    def resolved(self, base: Path) -> SlackBotConfig:
        """The same settings with relative paths taken from ``base``."""
        update: dict[str, Path] = {}
        for name in ("runner_config", "cards_dir", "data_dir"):
            value = getattr(self, name)
            if isinstance(value, Path) and not value.is_absolute():
                update[name] = (base / value).resolve()
        return self.model_copy(update=update)


def load_bot_config(path: Path) -> SlackBotConfig:
    """Read and check the bot's TOML file; :class:`BotConfigError` naming what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BotConfigError(f"--config {path}: cannot read it ({e.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BotConfigError(f"--config {path}: not valid TOML ({e})") from None
    try:
        config = SlackBotConfig.model_validate(data)
    except ValidationError as e:
        raise BotConfigError(f"--config {path}: {describe_validation_error(e)}") from None
    return config.resolved(path.parent.resolve())


class SlackTokens:
    """The bot and app tokens (``repr`` never shows them)."""

    __slots__ = ("app", "bot")

    def __init__(self, bot: str, app: str) -> None:
        self.bot = bot
        self.app = app

    def __repr__(self) -> str:
        return "SlackTokens(bot=***, app=***)"


def read_tokens(environ: Mapping[str, str] | None = None) -> SlackTokens:
    """``SLACK_BOT_TOKEN`` and ``SLACK_APP_TOKEN`` from the environment, checked by shape."""
    env = os.environ if environ is None else environ
    bot = env.get("SLACK_BOT_TOKEN", "").strip()
    app = env.get("SLACK_APP_TOKEN", "").strip()
    if not bot.startswith("xoxb-"):
        raise BotConfigError(
            "the environment variable SLACK_BOT_TOKEN must hold the bot token (xoxb-...)"
            + ("" if bot else "; it is not set")
        )
    if not app.startswith("xapp-"):
        raise BotConfigError(
            "the environment variable SLACK_APP_TOKEN must hold an app-level token (xapp-..., "
            "scope connections:write)" + ("" if app else "; it is not set")
        )
    return SlackTokens(bot, app)
