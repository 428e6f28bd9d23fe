"""Paging a long text file for the model: whole lines, a size cap, where the next part starts.

Lines are counted as git and editors count them: a line ends after each ``\\n`` (a ``\\r``, a form
feed or U+2028 inside a line does not start a new one). A part holds whole lines up to the size
cap. A single line longer than a whole part is split into pieces of the cap's size, and the note
says where the rest starts (``start_line`` and ``start_column``), so nothing is ever cut without
saying how to get the rest: reading part after part as the notes say gives back the whole file.
"""

from __future__ import annotations

from loopkit.abstractions import ToolError


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each with its ``\\n`` (the last one may have none)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def page_lines(
    text: str,
    start_line: int,
    max_lines: int | None,
    max_chars: int,
    *,
    start_column: int = 1,
) -> str:
    """Lines ``start_line``.. of ``text`` (from ``start_column`` of the first one), as many as fit
    in ``max_chars`` (and ``max_lines``), with a note naming what was shown and where the next part
    starts when anything is left out.

    Whole lines only, unless one line is longer than ``max_chars``: then it comes in pieces of
    ``max_chars`` characters, the note saying ``line N continues: the next part starts at
    start_line=N, start_column=C`` (a rest that is only the line break comes along, one or two
    characters over the cap, rather than make a part of its own).

    A note is always on its own last line; the body before it ends with the file's own line
    break, or with one added for the note when the part ends inside a line (the note then says
    "continues") or at the end of a file without a final line break (the note then says so).
    """
    if start_line < 1:
        raise ToolError(f"start_line must be 1 or more, got {start_line}")
    if start_column < 1:
        raise ToolError(f"start_column must be 1 or more, got {start_column}")
    if max_lines is not None and max_lines < 1:
        raise ToolError(f"max_lines must be 1 or more, got {max_lines}")
    if max_chars < 1:
        raise ToolError(f"max_chars must be 1 or more, got {max_chars}")
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return text
    if start_line > total:
        raise ToolError(f"start_line {start_line} is past the end: the file has {total} lines")
    first = start_line - 1
    if start_column > len(lines[first]):
        raise ToolError(
            f"start_column {start_column} is past the end of line {start_line}: it has "
            f"{len(lines[first])} characters, its line break included"
        )
    last = total if max_lines is None else min(total, first + max_lines)
    shown: list[str] = []
    size = 0
    i, col = first, start_column - 1
    cut = False
    while i < last:
        piece = lines[i][col:]
        if size + len(piece) > max_chars:
            if not shown and piece[max_chars:].strip("\r\n") == "" and piece.endswith("\n"):
                shown.append(piece)  # only its line break is over: no piece of nothing but that
                i, col = i + 1, 0
            elif not shown:  # one line longer than a whole part: show a piece of it
                shown.append(piece[:max_chars])
                col += max_chars
                cut = True
            break
        shown.append(piece)
        size += len(piece)
        i, col = i + 1, 0
    body = "".join(shown)
    if first == 0 and start_column == 1 and i == total:
        return body
    end = i + 1 if cut else i  # the last line shown, whole or in part (1-based)
    note = f"[line {start_line}" if end == start_line else f"[lines {start_line}-{end}"
    note += f" of {total}"
    if start_column > 1:
        note += f" (line {start_line} from column {start_column})"
    if cut:
        note += (
            f"; line {end} continues: the next part starts at start_line={end}, "
            f"start_column={col + 1}"
        )
    elif i < total:
        note += f"; the next part starts at start_line={i + 1}"
    elif not text.endswith("\n"):
        note += "; the file does not end with a line break"
    note += "]"
    return body + ("" if body.endswith("\n") else "\n") + note
