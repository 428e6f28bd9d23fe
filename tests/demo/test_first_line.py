"""The demo's first line names the transcript actually played, and strict mode has a flag."""

from __future__ import annotations

from pathlib import Path

from loopkit.cards import load_config
from loopkit.demo.__main__ import parse_args
from loopkit.demo.run import first_line

CARD = Path("examples/cards/delete-asks-for-confirmation.md")


def test_the_bundled_transcript_is_named_by_its_card() -> None:
    line = first_line(load_config(), CARD)
    assert "the bundled transcript for delete-asks-for-confirmation.md" in line
    assert "strict: every tool result checked" in line


def test_a_transcript_given_is_named_by_its_path(tmp_path: Path) -> None:
    mine = tmp_path / "my-card.json"
    line = first_line(load_config(transcript=mine), CARD)
    assert str(mine) in line
    assert "bundled" not in line


def test_strict_flag_reaches_the_config_and_the_first_line() -> None:
    assert parse_args([str(CARD)]).strict is None  # not given: the config decides
    assert load_config(strict=parse_args([str(CARD)]).strict).strict is True
    lenient = load_config(strict=parse_args(["--no-strict", str(CARD)]).strict)
    assert lenient.strict is False
    assert "lenient: unchecked" in first_line(lenient, CARD)
    assert load_config(strict=parse_args(["--strict", str(CARD)]).strict).strict is True


def test_a_real_model_line_names_the_model() -> None:
    line = first_line(load_config(model="openai/gpt-5"), CARD)
    assert line.startswith("[bold]Model: openai/gpt-5[/bold] via litellm")
    assert "transcript" not in line


def test_recording_a_durable_run_is_refused_as_bad_input(capsys: object) -> None:
    import pytest

    with pytest.raises(SystemExit) as stopped:
        parse_args(["--durable", "--record-transcript", "t.json", str(CARD)])
    assert stopped.value.code == 2
