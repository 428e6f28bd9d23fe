"""read_file answers long files in parts of whole lines, each below the loop's 4,000-character cut."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tools_helpers import tool_by_name

from loopkit import ToolError
from loopkit_tools import LocalTools, ToolsConfig, page_lines

TEXT = "".join(f"line {i:03d} " + "x" * 30 + "\n" for i in range(1, 201))  # 200 lines, 40 chars


def test_short_text_is_returned_whole() -> None:
    assert page_lines("a\nb\n", 1, None, 3500) == "a\nb\n"


def test_parts_of_whole_lines_with_a_note_naming_the_next_start() -> None:
    first = page_lines(TEXT, 1, None, 1000)
    body, note = first.rsplit("\n", 1)
    assert note == "[lines 1-25 of 200; the next part starts at start_line=26]"
    assert body.splitlines()[-1].startswith("line 025")
    assert len(body) <= 1000
    second = page_lines(TEXT, 26, 10, 1000)
    assert second.splitlines()[0].startswith("line 026")
    assert second.endswith("[lines 26-35 of 200; the next part starts at start_line=36]")
    last = page_lines(TEXT, 195, None, 1000)
    assert last.endswith("[lines 195-200 of 200]")


def test_reading_all_parts_gives_the_whole_file() -> None:
    start, parts = 1, []
    while True:
        part = page_lines(TEXT, start, None, 700)
        body, note = part.rsplit("\n", 1)
        parts.append(body + "\n")
        if "next part starts at start_line=" not in note:
            break
        start = int(note.rsplit("=", 1)[1].rstrip("]"))
    assert "".join(parts) == TEXT


def test_a_line_longer_than_a_part_comes_in_pieces_with_a_note() -> None:
    part = page_lines("y" * 5000 + "\nz\n", 1, None, 1000)
    assert part == "y" * 1000 + "\n[line 1 of 2; line 1 continues: the next part starts at " + (
        "start_line=1, start_column=1001]"
    )
    last = page_lines("y" * 5000 + "\nz\n", 1, None, 1000, start_column=4001)
    # the rest of the line fits but for its line break: the line break comes along
    assert last == "y" * 1000 + "\n[line 1 of 2 (line 1 from column 4001); the next part " + (
        "starts at start_line=2]"
    )


NEXT = re.compile(r"start_line=(\d+)(?:, start_column=(\d+))?\]$")


def read_all(text: str, max_chars: int, max_lines: int | None = None) -> tuple[str, int]:
    """Read ``text`` part after part as the notes say, the way a model would; (text, parts).

    A body is followed by the note on its own line; the line break before the note belongs to
    the body unless the note says the line continues or the file has no final line break.
    """
    start, column, pieces, parts = 1, 1, [], 0
    while True:
        part = page_lines(text, start, max_lines, max_chars, start_column=column)
        parts += 1
        body, _, note = part.rpartition("\n")
        if not note.startswith("[line"):
            assert parts == 1, "only a whole file comes without a note"
            return part, parts
        added = "continues" in note or "does not end with a line break" in note
        assert len(body) <= max_chars + 1, f"a part is over the cap: {len(body)} characters"
        pieces.append(body if added else body + "\n")
        match = NEXT.search(note)
        if match is None:
            return "".join(pieces), parts
        start, column = int(match[1]), int(match[2] or 1)


LONG = "".join(chr(0x61 + i % 26) for i in range(20_000))  # no line break, 20,000 characters


@pytest.mark.parametrize(
    "text",
    [
        LONG + "\n",
        LONG,
        "short\n" + LONG + "\n" + "tail\n",
        "a\r\n"
        + "b" * 9_000
        + "\r\n\n\nc\x0cstill c\u2028still c\n"
        + "x" * 999
        + "\n"
        + "y" * 1000,
        "\n".join("z" * n for n in (0, 1, 999, 1000, 1001, 1002, 2500, 3)) + "\n",
    ],
    ids=["one long line", "no final line break", "long line between", "mixed", "boundaries"],
)
@pytest.mark.parametrize("max_lines", [None, 2])
def test_concatenating_all_parts_gives_the_file_exactly(text: str, max_lines: int | None) -> None:
    whole, parts = read_all(text, 1000, max_lines)
    assert whole == text
    assert parts >= len(text) // 1001  # it really came in parts of at most the cap


def test_only_line_feeds_end_lines() -> None:
    """A form feed or U+2028 inside a line does not make two lines of it (as git counts)."""
    text = "a\x0cb\u2028c\rd\ne\n"
    assert page_lines(text, 2, None, 1000) == "e\n[line 2 of 2]"


async def test_read_file_takes_start_column(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "min.js").write_text("v" * 5000 + "w" * 10 + "\n")
    local = LocalTools(ToolsConfig(root=tmp_path, write_folders=["app"], app_ready=None))
    read = tool_by_name(local, "read_file")
    assert "start_column" in read.parameters["properties"]
    assert "start_column" in read.description
    first = await read.invoke({"path": "app/min.js"})
    assert first.endswith(
        "[line 1 of 1; line 1 continues: the next part starts at start_line=1, start_column=3501]"
    )
    rest = await read.invoke({"path": "app/min.js", "start_line": 1, "start_column": 3501})
    assert rest == "v" * 1500 + "w" * 10 + "\n[line 1 of 1 (line 1 from column 3501)]"


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (0, "start_column must be 1 or more, got 0"),
        (43, "start_column 43 is past the end of line 1: it has 42 characters, its line break"),
    ],
)
def test_bad_columns_are_clear_errors(column: int, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        page_lines("q" * 41 + "\n", 1, None, 1000, start_column=column)


@pytest.mark.parametrize(
    ("start", "count", "message"),
    [
        (0, None, "start_line must be 1 or more"),
        (1, 0, "max_lines must be 1 or more"),
        (500, None, "start_line 500 is past the end: the file has 200 lines"),
    ],
)
def test_bad_ranges_are_clear_errors(start: int, count: int | None, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        page_lines(TEXT, start, count, 1000)


def test_the_smallest_parts_are_allowed_and_named() -> None:
    """max_lines=1 and max_chars=1 are valid limits; 0 is refused with the value named."""
    assert page_lines(TEXT, 2, 1, 1000) == (
        TEXT.splitlines()[1] + "\n[line 2 of 200; the next part starts at start_line=3]"
    )
    assert page_lines("ab\n", 1, None, 1) == (
        "a\n[line 1 of 1; line 1 continues: the next part starts at start_line=1, start_column=2]"
    )
    with pytest.raises(ToolError, match=r"^max_chars must be 1 or more, got 0$"):
        page_lines(TEXT, 1, None, 0)
    with pytest.raises(ToolError, match=r"^max_lines must be 1 or more, got 0$"):
        page_lines(TEXT, 1, 0, 1000)


def test_only_a_line_break_rides_along_over_the_cap() -> None:
    """A rest of spaces or of any other character is a piece of its own, not a line break."""
    for rest in ("  \n", "X\n", "\t\n"):
        text = "x" * 10 + rest
        assert page_lines(text, 1, None, 10) == "x" * 10 + (
            "\n[line 1 of 1; line 1 continues: the next part starts at start_line=1, "
            "start_column=11]"
        )
    assert page_lines("x" * 10 + "\r\n", 1, None, 10) == "x" * 10 + "\r\n"


def test_pieces_of_a_long_line_count_columns_from_where_the_part_began() -> None:
    text = "y" * 5000 + "\n"
    assert page_lines(text, 1, None, 1000, start_column=1001) == "y" * 1000 + (
        "\n[line 1 of 1 (line 1 from column 1001); line 1 continues: the next part starts at "
        "start_line=1, start_column=2001]"
    )
    assert page_lines("ab\ncd\n", 1, None, 1000, start_column=2) == (
        "b\ncd\n[lines 1-2 of 2 (line 1 from column 2)]"
    )


def test_a_last_part_says_the_file_has_no_final_line_break() -> None:
    assert page_lines("a\nb", 2, None, 1000) == (
        "b\n[line 2 of 2; the file does not end with a line break]"
    )
