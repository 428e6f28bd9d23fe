"""read_file answers long files in parts of whole lines, each below the loop's 4,000-character cut."""

from __future__ import annotations

import pytest

from loopkit import ToolError
from loopkit_tools import page_lines

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
