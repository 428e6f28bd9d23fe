"""Paging a long text file for the model: whole lines, a size cap, where the next part starts."""

from __future__ import annotations

from loopkit.abstractions import ToolError


def page_lines(text: str, start_line: int, max_lines: int | None, max_chars: int) -> str:
    """Lines ``start_line``.. of ``text``, as many as fit in ``max_chars`` (and ``max_lines``),
    with a note naming the lines shown and where the next part starts when anything is left out.

    Whole lines only: a model editing a file must never see a line cut in half.
    """
    if start_line < 1:
        raise ToolError(f"start_line must be 1 or more, got {start_line}")
    if max_lines is not None and max_lines < 1:
        raise ToolError(f"max_lines must be 1 or more, got {max_lines}")
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if total == 0:
        return text
    if start_line > total:
        raise ToolError(f"start_line {start_line} is past the end: the file has {total} lines")
    first = start_line - 1
    last = total if max_lines is None else min(total, first + max_lines)
    shown: list[str] = []
    size = 0
    for line in lines[first:last]:
        if shown and size + len(line) > max_chars:
            break
        shown.append(line)
        size += len(line)
    end = first + len(shown)
    body = "".join(shown)
    if first == 0 and end == total:
        return body
    note = f"[lines {start_line}-{end} of {total}"
    if end < total:
        note += f"; the next part starts at start_line={end + 1}"
    note += "]"
    return body + ("" if body.endswith("\n") else "\n") + note
