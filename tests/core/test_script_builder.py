"""ScriptBuilder: transcripts written in code, for any agent; the file a strict replay plays, a
bad turn refused where it is written, and the --check of a generator script."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import Agent, ScriptedChatClient, tool
from loopkit.abstractions import ToolError
from loopkit.errors import ScriptDivergedError
from loopkit.providers.script_builder import ScriptBuilder, call, ok, refused, sync_transcripts
from loopkit.providers.scripted import Script

STOCK = {"apples": 3}


@tool
def count(item: str) -> str:
    """How many of an item are in stock."""
    if item not in STOCK:
        raise ToolError(f"no such item: {item}")  # a refusal the model is shown
    return f"{item}: {STOCK[item]}"


def apples(expected: str = "apples: 3") -> ScriptBuilder:
    return (
        ScriptBuilder("Counting apples.")
        .turn(call("count", ok(expected), item="apples"), text="Counting.")
        .turn(call("count", refused("no such item"), item="pears"))
        .answer("3 apples, no pears.")
    )


async def test_a_built_transcript_replays_strictly_and_diverges_when_the_tool_changes(
    tmp_path: Path,
) -> None:
    path = apples().save(tmp_path / "sub" / "apples.json")
    assert Script.load(path) == apples().script()
    played = await Agent(ScriptedChatClient(path), tools=[count]).run("How many?")
    assert played.output == "3 apples, no pears."
    # the same transcript against a tool that answers differently stops at that call
    STOCK["apples"] = 4
    try:
        with pytest.raises(ScriptDivergedError, match="expected it to contain 'apples: 3'"):
            await Agent(ScriptedChatClient(path), tools=[count]).run("How many?")
    finally:
        STOCK["apples"] = 3


def test_a_bad_turn_is_refused_where_it_is_written() -> None:
    builder = ScriptBuilder()
    with pytest.raises(ValueError, match=r"turn 1 is not valid: calls\.0\.expect\.contians"):
        builder.turn({"name": "count", "arguments": {}, "expect": {"contians": ["x"]}})
    assert builder.turns == []


def test_sync_writes_missing_and_changed_files_and_check_only_names_them(tmp_path: Path) -> None:
    builders = {"apples": apples, "role/apples": lambda: apples().data()}
    assert sync_transcripts(builders, tmp_path, check=True) == [
        tmp_path / "apples.json",
        tmp_path / "role" / "apples.json",
    ]
    assert not (tmp_path / "apples.json").exists()  # check writes nothing
    assert len(sync_transcripts(builders, tmp_path)) == 2
    assert sync_transcripts(builders, tmp_path, check=True) == []
    (tmp_path / "role" / "apples.json").write_text(apples("apples: 4").render())
    assert sync_transcripts(builders, tmp_path, check=True) == [tmp_path / "role" / "apples.json"]
