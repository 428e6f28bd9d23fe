"""The card runner's configuration: a TOML file plus ``LOOPKIT_*`` environment variables.

Precedence, highest first: command-line options, environment variables (``LOOPKIT_MODEL``,
``LOOPKIT_MAX_ROUNDS``, nested with ``__`` as in ``LOOPKIT_UI_SERVER__URL``), the TOML file, the
defaults below. Secrets do not belong in the file: API keys come from the provider's usual
environment variables (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ...).
"""

from __future__ import annotations

import os
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from loopkit.errors import LoopkitError, describe_validation_error
from loopkit.mcp.config import MCPServerConfig

SCRIPTED = "scripted"
#: A card file larger than this is refused unread (``max_card_bytes``).
DEFAULT_MAX_CARD_BYTES = 64 * 1024
#: Seconds a model request may take (as ``loopkit.providers.litellm.DEFAULT_TIMEOUT``).
DEFAULT_REQUEST_TIMEOUT = 120.0
#: A config file larger than this is not a config file.
MAX_CONFIG_BYTES = 1_000_000
#: The tools a card run may leave out of its requests until the model loads them
#: (``defer_tools``): the UI server's, write_file (a change is an edit_file, a new file is
#: rare) and the memory tools a run needs now and then (the router, a search and writing a note
#: stay offered: the memory-first rule uses them in every run). Every other tool (local, tester,
#: ...) is offered on every request.
DEFAULT_DEFER_TOOLS = (
    "ui_*",
    "write_file",
    "read_topic",
    "read_note",
    "add_rule",
    "read_rules",
    "check_terms",
)
#: Of those, the ones offered on every request all the same (``core_tools``): the UI tools
#: nearly every card uses, the invoice app's table cells and text fields included. The others
#: are listed by ``load_tools`` and loaded on demand. A load changes the tools, which come first
#: in the prompt: a provider's cache then writes the whole prompt again (Anthropic: "modifying
#: tool definitions invalidates the entire cache"), so a tool most runs need is cheaper offered
#: from the start than loaded.
DEFAULT_CORE_TOOLS = (
    "ui_list_windows",
    "ui_tree",
    "ui_get_text",
    "ui_get_cell",
    "ui_click",
    "ui_type_text",
    "ui_set_cell",
    "ui_screenshot",
)


class ConfigError(LoopkitError):
    """The configuration file or a setting is not valid."""


def _default_ui_server() -> MCPServerConfig:
    return MCPServerConfig(
        name="ui",
        command=[sys.executable, "-m", "loopkit_ui.server", "--app-name", "invoice_app"],
        inherit_env=True,
        startup_timeout=60.0,
        call_timeout=60.0,
    )


def project_root() -> Path:
    """The loopkit checkout this package runs from (where ``examples/`` lives), else the cwd."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "examples" / "invoice_app").is_dir():
            return parent
    return Path.cwd()


class RunnerConfig(BaseSettings):
    """Everything a card run is configured by. See ``examples/configs/`` for complete files."""

    model_config = SettingsConfigDict(
        env_prefix="LOOPKIT_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    model: str = Field(
        default=SCRIPTED,
        description="A litellm model string (anthropic/claude-sonnet-4-5, openai/gpt-5, "
        "openai/<name> with api_base, ollama/...), or 'scripted' for the bundled transcripts.",
    )
    api_base: str | None = Field(default=None, description="Endpoint of the model's API.")
    max_rounds: int = Field(default=60, ge=1, description="Model requests before the run stops.")
    max_tokens: int = Field(default=400_000, ge=1, description="Token budget of the whole run.")
    max_output_tokens: int = Field(default=4096, ge=1, description="Output tokens per request.")
    temperature: float | None = Field(default=None, description="Sent only when set.")
    retries: int = Field(default=4, ge=1, description="Attempts per request (transient errors).")
    request_timeout: float = Field(
        default=DEFAULT_REQUEST_TIMEOUT,
        gt=0,
        description="Seconds one model request may take before it fails as a (retryable) timeout.",
    )
    max_card_bytes: int = Field(
        default=DEFAULT_MAX_CARD_BYTES,
        ge=1,
        description="A card file larger than this is refused unread (exit status 2).",
    )
    transcript: Path | None = Field(
        default=None, description="The scripted model's transcript (default: the card's bundled)."
    )
    strict: bool = Field(default=True, description="Scripted model: check every tool result.")
    record_transcript: Path | None = Field(
        default=None,
        description="Record the model's turns into this transcript file (replay it with "
        "transcript = ...); written at the end of the run, also when it fails.",
    )
    ui_server: MCPServerConfig = Field(default_factory=_default_ui_server)
    tools_provider: str = Field(
        default="loopkit_tools",
        description="Module providing ToolsConfig and LocalTools (the local tools' plug-in).",
    )
    defer_tools: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DEFER_TOOLS),
        description="Tools (names or fnmatch patterns such as 'ui_*') left out of the model's "
        "requests, except those in core_tools, until the model loads them with load_tools. "
        "[] offers every tool on every request (no load_tools).",
    )
    core_tools: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CORE_TOOLS),
        description="Of the defer_tools, those offered on every request all the same.",
    )
    tools: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings for the local tools (loopkit_tools.ToolsConfig).",
    )
    app_source: Path = Field(
        default_factory=lambda: project_root() / "examples" / "invoice_app",
        description="The app copied into each run's scratch repository.",
    )
    roles_dir: Path | None = Field(
        default=None,
        description="A folder of your own role files (<name>.md, and reference/<name>.md): a "
        "role there overrides a bundled role of the same name.",
    )
    replay: bool = Field(
        default=True,
        description="A role that verifies (develop) replays its live checks as a regression "
        "script on a fresh app of the committed code before its RESULT: done counts; false: the "
        "evidence is checked, nothing replayed.",
    )
    runs_dir: Path = Field(
        default=Path("runs"), description="Where scratch repositories and logs go."
    )
    log: Path | None = Field(default=None, description="The run log (default: in the run folder).")
    durable: bool = Field(
        default=False,
        description="Run the card as a durable workflow (the `durable` extra): every model "
        "request and tool call is a checkpoint, and a run that is killed or stopped is resumed "
        "with `python -m loopkit.demo --resume`.",
    )
    database_url: str | None = Field(
        default=None,
        description="Where durable runs keep their checkpoints: sqlite:///path or "
        "postgresql+psycopg://user@host/db (default: runs_dir/loopkit.sqlite).",
    )
    approval_required: list[str] = Field(
        default_factory=list,
        description="Tools whose every call waits for a person's yes (the board's run page, "
        "the Slack thread): durable runs only (the queue's workers, --durable).",
    )
    approval_timeout: float = Field(
        default=24 * 3600.0,
        gt=0,
        description="Seconds a call in approval_required waits for an answer before it is refused.",
    )
    headless: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="Start a headless desktop (Xvfb + AT-SPI): auto = when DISPLAY is not set.",
    )

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must be a litellm model string or 'scripted'")
        return value.strip()

    #: The parsed TOML file, lowest precedence (set on the per-file subclass by load_config).
    file_values: ClassVar[dict[str, Any]] = {}

    @property
    def scripted(self) -> bool:
        return self.model == SCRIPTED

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        file_values = getattr(settings_cls, "file_values", {})
        if file_values:
            # The file was read and checked once by load_config; never read it a second time.
            sources.append(InitSettingsSource(settings_cls, init_kwargs=file_values))
        return tuple(sources)


def read_config_file(path: Path) -> dict[str, Any]:
    """The TOML table in ``path``; a :class:`ConfigError` naming the file for anything else (a
    missing file, a folder, a device or FIFO, a file too large, not UTF-8, not TOML)."""
    try:
        with path.open("rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(f"config file {path} is not a regular file (a TOML file)")
            data = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory, not a TOML file") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {e.start}); a TOML file was expected"
        ) from None
    try:
        return tomllib.loads(text)  # a syntax error is reported here, with its line
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None


def load_config(path: str | Path | None = None, **overrides: Any) -> RunnerConfig:
    """Read the configuration: ``overrides`` (e.g. from the command line, ``None`` = not given)
    beat the environment, which beats the TOML file at ``path``, which beats the defaults."""
    given = {k: v for k, v in overrides.items() if v is not None}
    cls: type[RunnerConfig] = RunnerConfig
    from_file: dict[str, Any] = {}
    if path is not None:
        from_file = read_config_file(Path(path))

        class FromFile(RunnerConfig):
            file_values = from_file

        cls = FromFile
    try:
        config = cls(**given)
    except ValidationError as e:
        where = f"config file {path}" if path else "configuration"
        raise ConfigError(f"{where}: {describe_validation_error(e)}") from None
    # Relative paths in the file are relative to the file, not to wherever the run started.
    if path is not None:
        base = Path(path).resolve().parent
        for name in (
            "transcript",
            "record_transcript",
            "app_source",
            "runs_dir",
            "log",
            "roles_dir",
        ):
            value = getattr(config, name)
            from_toml = name in from_file and name not in given
            if isinstance(value, Path) and not value.is_absolute() and from_toml:
                setattr(config, name, base / value)
    return RunnerConfig.model_validate(config.model_dump())
