"""The model of a demo run: the scripted model's transcripts, a real model's key, the run's
first lines (which model answers, which role it takes: :func:`announce_run`), and the scripted
model's place in a resumed durable run (:class:`ScriptPosition`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from loopkit.abstractions.chat import ChatClient, ChatOptions, ChatResponse
from loopkit.abstractions.content import ChatMessage, ChatRole
from loopkit.cards import Card, CardState, ConfigError, RunnerConfig
from loopkit.cards.roles import Role
from loopkit.demo.role_tools import DEFAULT_ROLE, find_role
from loopkit.errors import CardError
from loopkit.middleware.delegating import DelegatingChatClient

if TYPE_CHECKING:
    from loopkit.providers.scripted import ScriptedChatClient

__all__ = [
    "ScriptPosition",
    "announce_run",
    "bundled_transcripts",
    "check_model",
    "first_line",
    "instructions",
    "make_model",
    "role_line",
    "transcript_for",
]

_KEY_VARIABLES = {"anthropic/": "ANTHROPIC_API_KEY", "openai/": "OPENAI_API_KEY"}


def instructions(role: str = DEFAULT_ROLE) -> str:
    """The instructions of a bundled role (the ``develop`` role's by default)."""
    return find_role(RunnerConfig(), role).instructions


def bundled_transcripts(role: str = DEFAULT_ROLE) -> dict[str, Path]:
    """The scripted model's transcripts for ``role`` by card name: ``transcripts/<card>.json``
    for ``develop``, ``transcripts/<role>/<card>.json`` for the other roles."""
    folder = resources.files("loopkit.demo").joinpath("transcripts")
    if role != DEFAULT_ROLE:
        folder = folder.joinpath(role)
        if not folder.is_dir():
            return {}
    return {
        Path(str(entry)).stem: Path(str(entry))
        for entry in folder.iterdir()
        if str(entry).endswith(".json")
    }


def transcript_for(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> Path:
    """The transcript the scripted model plays: the one given, else the bundled one of the card
    for ``role``."""
    if config.transcript is not None:
        return config.transcript
    available = bundled_transcripts(role)
    found = available.get(card_path.stem)
    if found is None:
        of_role = "" if role == DEFAULT_ROLE else f" in the role {role!r}"
        raise CardError(
            f"the scripted model has no transcript for {card_path.name}{of_role} (bundled: "
            f"{', '.join(sorted(available)) or 'none'}). Give one with --transcript, or use a "
            "real model with --model / --config."
        )
    return found


def first_line(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> str:
    """The run's first line: which model answers, and for the scripted model which transcript
    it plays (the bundled one of the role, or the file given) and whether it checks every tool
    result."""
    if config.scripted:
        of_role = "" if role == DEFAULT_ROLE else f"{escape(role)} "
        played = (
            f"the transcript {escape(str(config.transcript))}"
            if config.transcript is not None
            else f"the bundled {of_role}transcript for {escape(card_path.name)}"
        )
        mode = "strict: every tool result checked" if config.strict else "lenient: unchecked"
        return (
            f"[bold]Model: scripted[/bold] (no API key needed): it plays {played} ({mode}); "
            "every tool call is real. For Claude: set ANTHROPIC_API_KEY and add --config "
            "examples/configs/claude.toml; for OpenAI: OPENAI_API_KEY and --model openai/gpt-5."
        )
    return f"[bold]Model: {escape(config.model)}[/bold] via litellm" + (
        f" at {escape(config.api_base)}" if config.api_base else ""
    )


def _check_key(config: RunnerConfig) -> None:
    for prefix, variable in _KEY_VARIABLES.items():
        if config.model.startswith(prefix) and not config.api_base and not os.environ.get(variable):
            raise ConfigError(
                f"model {config.model} needs {variable} in the environment (or an api_base for a "
                "compatible server); without a key, leave --model out to use the scripted model"
            )


def role_line(role: Role) -> str:
    """The run's second line: the role it takes and where its file is."""
    where = f" ({escape(str(role.path))})" if role.path is not None else ""
    return f"[bold]Role: {escape(role.name)}[/bold]{where}: {escape(role.description)}"


def make_model(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> ChatClient:
    """The bare model client the config names (the scripted model plays its transcript)."""
    if config.scripted:
        from loopkit.providers.scripted import ScriptedChatClient

        return ScriptedChatClient(
            transcript_for(config, card_path, role),
            strict=config.strict,
            require_offered=config.strict,
        )
    _check_key(config)
    from loopkit.providers.litellm import LiteLLMChatClient

    return LiteLLMChatClient(config.model, api_base=config.api_base, timeout=config.request_timeout)


def check_model(config: RunnerConfig, card_path: Path, role: str = DEFAULT_ROLE) -> None:
    """The model can be made: the transcript loads (scripted) or the key is there (litellm)."""
    if not config.scripted:
        _check_key(config)
        return
    from loopkit.providers.scripted import Script

    path = transcript_for(config, card_path, role)
    try:
        Script.load(path)
    except ValueError as e:  # the scripted model's own loader: missing, not JSON, wrong shape
        raise ConfigError(f"transcript (--transcript or `transcript`): {e}") from None


def announce_run(
    config: RunnerConfig,
    card: Card,
    role: Role,
    console: Console,
    expected_state: CardState | None = None,
) -> None:
    """A run's first lines (the model, the role) and, when the card is in a state it is not
    run from (``expected_state``: the state a pipeline's next run finds by design), a note that
    it runs again. A real model's litellm starts importing meanwhile (it takes seconds)."""
    assert card.path is not None
    console.print(first_line(config, card.path, role.name))
    console.print(role_line(role))
    if not config.scripted:
        from loopkit.providers.litellm import start_background_import

        start_background_import()  # litellm takes seconds to import; overlap it with set-up
    tested = card.state is CardState.IN_TEST and role.front_matter.card_state == "In Test"
    # A tester runs on a card In Test; a pipeline's next run on the state the last one left.
    if card.state not in (CardState.NEW, expected_state) and not tested:
        console.print(
            f"[yellow]note:[/yellow] the card is in state {card.state.value}; running it again"
        )


class ScriptPosition(DelegatingChatClient):
    """Keeps a scripted model at the right turn in a resumed run: the replayed requests never
    reach it, so its turn is the number of the model's answers in the conversation sent."""

    def __init__(self, inner: ScriptedChatClient) -> None:
        super().__init__(inner)
        self.script = inner

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.script.position = sum(1 for m in messages if m.role == ChatRole.ASSISTANT)
        return await self.inner.get_response(messages, options)
