"""The card runner's configuration: a TOML file plus ``LOOPKIT_*`` environment variables.

Precedence, highest first: command-line options, environment variables (``LOOPKIT_MODEL``,
``LOOPKIT_MAX_ROUNDS``, nested with ``__`` as in ``LOOPKIT_UI_SERVER__URL``), the TOML file, the
defaults below. Secrets do not belong in the file: API keys come from the provider's usual
environment variables (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ...).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from loopkit.errors import LoopkitError, describe_validation_error
from loopkit.mcp.config import MCPServerConfig

SCRIPTED = "scripted"


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
    transcript: Path | None = Field(
        default=None, description="The scripted model's transcript (default: the card's bundled)."
    )
    strict: bool = Field(default=True, description="Scripted model: check every tool result.")
    ui_server: MCPServerConfig = Field(default_factory=_default_ui_server)
    tools_provider: str = Field(
        default="loopkit_tools",
        description="Module providing ToolsConfig and LocalTools (the local tools' plug-in).",
    )
    tools: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings for the local tools (loopkit_tools.ToolsConfig).",
    )
    app_source: Path = Field(
        default_factory=lambda: project_root() / "examples" / "invoice_app",
        description="The app copied into each run's scratch repository.",
    )
    runs_dir: Path = Field(
        default=Path("runs"), description="Where scratch repositories and logs go."
    )
    log: Path | None = Field(default=None, description="The run log (default: in the run folder).")
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
        if settings_cls.model_config.get("toml_file"):
            sources.append(TomlConfigSettingsSource(settings_cls))
        return tuple(sources)


def load_config(path: str | Path | None = None, **overrides: Any) -> RunnerConfig:
    """Read the configuration: ``overrides`` (e.g. from the command line, ``None`` = not given)
    beat the environment, which beats the TOML file at ``path``, which beats the defaults."""
    given = {k: v for k, v in overrides.items() if v is not None}
    cls: type[RunnerConfig] = RunnerConfig
    from_file: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            with p.open("rb") as f:
                from_file = tomllib.load(f)  # a syntax error is reported here, with its line
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {p}") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {p} is not valid TOML: {e}") from None

        class FromFile(RunnerConfig):
            model_config = SettingsConfigDict(**{**RunnerConfig.model_config, "toml_file": p})

        cls = FromFile
    try:
        config = cls(**given)
    except ValidationError as e:
        where = f"config file {path}" if path else "configuration"
        raise ConfigError(f"{where}: {describe_validation_error(e)}") from None
    # Relative paths in the file are relative to the file, not to wherever the run started.
    if path is not None:
        base = Path(path).resolve().parent
        for name in ("transcript", "app_source", "runs_dir", "log"):
            value = getattr(config, name)
            from_toml = name in from_file and name not in given
            if isinstance(value, Path) and not value.is_absolute() and from_toml:
                setattr(config, name, base / value)
    return RunnerConfig.model_validate(config.model_dump())
