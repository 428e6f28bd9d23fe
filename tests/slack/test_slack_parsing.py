"""How a Slack message becomes a command: the first word the role, the rest the card."""

from __future__ import annotations

import pytest

from loopkit_board.slack.commands import (
    RunCommand,
    UnknownCommand,
    is_cancel,
    parse_command,
    roles_help,
)

ROLES = ("developer", "test")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("developer cards/a.md", RunCommand("developer", "cards/a.md")),
        ("<@U0BOT> Developer   cards/a.md ", RunCommand("developer", "cards/a.md")),
        ("<@U0BOT|loopkit>: test a.md", RunCommand("test", "a.md")),
        # Slack turns a typed URL-like word into a link; the label is what was typed
        ("developer <http://notes.md|notes.md>", RunCommand("developer", "notes.md")),
        (
            "test Totals &amp; discounts\nThe total &lt; subtotal",
            RunCommand("test", "Totals & discounts\nThe total < subtotal"),
        ),
        ("developer\nDelete asks first\nbody", RunCommand("developer", "Delete asks first\nbody")),
    ],
)
def test_commands(text: str, expected: RunCommand) -> None:
    assert parse_command(text, ROLES) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the message is empty"),
        ("<@U0BOT>", "the message is empty"),
        ("deploy cards/a.md", "'deploy' is not a role"),
        ("developer", "'developer' needs a card after it"),
        ("developer   ", "'developer' needs a card after it"),
    ],
)
def test_unknown_commands(text: str, reason: str) -> None:
    command = parse_command(text, ROLES)
    assert isinstance(command, UnknownCommand)
    assert reason in command.reason
    assert "`developer`, `test`" in roles_help(ROLES, command.reason)


@pytest.mark.parametrize(
    ("text", "cancels"),
    [
        ("cancel", True),
        ("<@U0BOT> Cancel.", True),
        ("  CANCEL!  ", True),
        ("cancel the run?", False),  # a question about the run, for the chat
        ("why did you cancel", False),
        ("", False),
    ],
)
def test_cancel_is_the_word_alone(text: str, cancels: bool) -> None:
    assert is_cancel(text) is cancels
