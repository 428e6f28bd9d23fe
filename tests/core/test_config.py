from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopkit.cards import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "loopkit.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_the_articles_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LOOPKIT_MODEL", "LOOPKIT_MAX_ROUNDS", "LOOPKIT_MAX_TOKENS"):
        monkeypatch.delenv(var, raising=False)
    config = load_config()
    assert (config.model, config.max_rounds, config.max_tokens, config.max_output_tokens) == (
        "scripted",
        60,
        400_000,
        4096,
    )
    assert config.scripted
    assert config.temperature is None  # sampling parameters are sent only when set
    assert config.ui_server.command is not None and "loopkit_ui.server" in config.ui_server.command


def test_command_line_beats_environment_beats_file_beats_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path, 'model = "anthropic/claude-sonnet-4-5"\nmax_rounds = 30\nmax_tokens = 1000\n'
    )
    monkeypatch.setenv("LOOPKIT_MAX_ROUNDS", "7")
    config = load_config(path)
    assert (config.model, config.max_rounds, config.max_tokens) == (
        "anthropic/claude-sonnet-4-5",
        7,
        1000,
    )
    config = load_config(path, model="openai/gpt-5", max_rounds=None)  # None: not given
    assert (config.model, config.max_rounds) == ("openai/gpt-5", 7)


def test_nested_tables_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(
        tmp_path,
        '[ui_server]\nurl = "http://127.0.0.1:8765/mcp"\n\n[tools]\nbuild_timeout_s = 30\n',
    )
    config = load_config(path)
    assert config.ui_server.url == "http://127.0.0.1:8765/mcp" and config.ui_server.command is None
    assert config.tools == {"build_timeout_s": 30}
    monkeypatch.setenv("LOOPKIT_UI_SERVER__URL", "http://127.0.0.1:9999/mcp")
    assert load_config(path).ui_server.url == "http://127.0.0.1:9999/mcp"


def test_relative_paths_in_the_file_are_relative_to_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'transcript = "t.json"\n')
    config = load_config(path)
    assert config.transcript == tmp_path / "t.json"
    assert config.runs_dir == Path("runs")  # not in the file: stays relative to the run


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("modle = 'x'\n", "modle: Extra inputs are not permitted"),
        ("max_rounds = 'many'\n", "max_rounds: Input should be a valid integer"),
        ("max_rounds = 0\n", "max_rounds: Input should be greater than or equal to 1"),
        ("model = \n", "is not valid TOML"),
        ("[ui_server]\ncommand = ['x']\nurl = 'http://127.0.0.1:1/mcp'\n", "exactly one of"),
    ],
)
def test_bad_configuration_names_the_setting(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        load_config(write(tmp_path, text))
    assert "loopkit.toml" in str(e.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")


def test_shipped_example_configs_load() -> None:
    root = Path(__file__).resolve().parents[2] / "examples" / "configs"
    models = {p.stem: load_config(p).model for p in root.glob("*.toml")}
    assert models["claude"].startswith("anthropic/")
    assert models["openai"].startswith("openai/")
    assert load_config(root / "local.toml").api_base == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "is a directory, not a TOML file"),
        (lambda p: _bytes(p / "c.toml", b"model = '\xff\xfe'\n"), "is not UTF-8 text"),
        (lambda p: _bytes(p / "c.toml", b"\x00\x01\x02"), "is not valid TOML"),
        (lambda p: Path("/dev/zero"), "is not a regular file"),
        (lambda p: _bytes(p / "big.toml", b"#" * 1_000_001), "is larger than 1,000,000 bytes"),
        (lambda p: p / "missing.toml", "config file not found"),
    ],
)
def test_a_config_that_is_not_a_toml_file_is_a_clear_error(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(ConfigError, match=message) as e:
        load_config(path)
    assert str(path) in str(e.value)


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_the_config_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked and parsed once: what is validated is what is used (no second read by name)."""
    path = write(tmp_path, "max_rounds = 9\n")
    opened: list[str] = []
    real_open = Path.open

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:
            opened.append(str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    assert load_config(path).max_rounds == 9
    assert len(opened) == 1


def test_request_timeout_and_max_card_bytes_defaults_and_bounds(tmp_path: Path) -> None:
    from loopkit.providers.litellm import DEFAULT_TIMEOUT

    config = load_config()
    assert config.request_timeout == DEFAULT_TIMEOUT == 120
    assert config.max_card_bytes == 64 * 1024
    for text, message in [
        ("request_timeout = 0\n", "request_timeout: Input should be greater than 0"),
        ("request_timeout = -1.5\n", "request_timeout: Input should be greater than 0"),
        ("request_timeout = 'slow'\n", "request_timeout: Input should be a valid number"),
        ("max_card_bytes = 0\n", "max_card_bytes: Input should be greater than or equal to 1"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_config(write(tmp_path, text))


def test_request_timeout_from_the_file_reaches_the_litellm_client(tmp_path: Path) -> None:
    from loopkit.demo.run import make_model
    from loopkit.providers.litellm import LiteLLMChatClient

    path = write(
        tmp_path,
        'model = "openai/local-model"\napi_base = "http://127.0.0.1:9/v1"\nrequest_timeout = 7.5\n',
    )
    client = make_model(load_config(path), tmp_path / "card.md")
    assert isinstance(client, LiteLLMChatClient)
    assert client.timeout == 7.5
    # and the default when the file says nothing
    path = write(tmp_path, 'model = "openai/local-model"\napi_base = "http://127.0.0.1:9/v1"\n')
    default = make_model(load_config(path), tmp_path / "card.md")
    assert isinstance(default, LiteLLMChatClient) and default.timeout == 120


def test_the_example_configs_load_and_state_the_request_timeout() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "configs"
    files = sorted(examples.glob("*.toml"))
    assert files
    for path in files:
        config = load_config(path)
        assert config.request_timeout > 0
        assert "request_timeout" in path.read_text(encoding="utf-8"), path
