"""A commit's diff as the run page shows it: per file, highlighted, unified and side by side.

The unified diff (``git diff``/``git show``) is parsed into files and hunks; each line's code
is highlighted with Pygments by the file's name (a lexer per file, the line alone: a line in the
middle of a docstring may be coloured as code, which a diff viewer accepts). The side-by-side
rows pair each run of removed lines with the run of added lines after it, as GitHub does. The
page shows side by side on wide screens and unified on narrow ones (CSS), so both are rendered.
Everything is escaped: a diff is the model's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from typing import Any

__all__ = ["DiffFile", "DiffLine", "parse_diff", "render_diff"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")
_FILE = re.compile(r"^diff --git a/(.*?) b/(.*)$")
#: Above this many lines the diff is shown without colours (still escaped, still split).
MAX_HIGHLIGHTED_LINES = 6000


@dataclass(slots=True)
class DiffLine:
    """One line of a hunk: ``kind`` ``+``, ``-`` or `` `` (context), its numbers, its text."""

    kind: str
    old: int | None
    new: int | None
    text: str
    html: str = ""


@dataclass(slots=True)
class DiffFile:
    """One file of the diff: its names, its header lines (mode, rename) and hunks."""

    old_name: str
    new_name: str
    notes: list[str] = field(default_factory=list)
    hunks: list[tuple[str, list[DiffLine]]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.new_name if self.new_name != "/dev/null" else self.old_name

    @property
    def added(self) -> int:
        return sum(1 for _, lines in self.hunks for line in lines if line.kind == "+")

    @property
    def removed(self) -> int:
        return sum(1 for _, lines in self.hunks for line in lines if line.kind == "-")


def parse_diff(text: str) -> tuple[list[str], list[DiffFile]]:
    """The lines before the first file (a commit's header) and the files of a unified diff."""
    head: list[str] = []
    files: list[DiffFile] = []
    current: DiffFile | None = None
    lines: list[DiffLine] | None = None
    old = new = 0
    for raw in text.splitlines():
        found = _FILE.match(raw)
        if found:
            current = DiffFile(found.group(1), found.group(2))
            files.append(current)
            lines = None
            continue
        if current is None:
            head.append(raw)
            continue
        hunk = _HUNK.match(raw)
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
            lines = []
            current.hunks.append((raw, lines))
            continue
        if lines is None:
            if raw.startswith("--- ") or raw.startswith("+++ "):
                name = raw[4:].removeprefix("a/").removeprefix("b/")
                if raw.startswith("---"):
                    current.old_name = name
                else:
                    current.new_name = name
            elif raw:
                current.notes.append(raw)
            continue
        if raw.startswith("+"):
            lines.append(DiffLine("+", None, new, raw[1:]))
            new += 1
        elif raw.startswith("-"):
            lines.append(DiffLine("-", old, None, raw[1:]))
            old += 1
        elif raw.startswith("\\"):
            current.notes.append(raw)
        else:
            lines.append(DiffLine(" ", old, new, raw[1:] if raw.startswith(" ") else raw))
            old += 1
            new += 1
    return head, files


def _highlight(files: list[DiffFile]) -> None:
    total = sum(len(lines) for f in files for _, lines in f.hunks)
    lexers: dict[str, Any] = {}
    highlight = None
    if total <= MAX_HIGHLIGHTED_LINES:
        try:
            from pygments import highlight as pygments_highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_for_filename
            from pygments.util import ClassNotFound
        except ImportError:
            pass
        else:
            formatter = HtmlFormatter(nowrap=True)

            def lexer_for(name: str) -> Any:
                if name not in lexers:
                    try:
                        lexers[name] = get_lexer_for_filename(name, stripnl=False)
                    except ClassNotFound:
                        lexers[name] = None
                return lexers[name]

            def highlight(name: str, text: str) -> str | None:
                lexer = lexer_for(name)
                if lexer is None:
                    return None
                return str(pygments_highlight(text, lexer, formatter)).rstrip("\n")

    for f in files:
        for _, lines in f.hunks:
            for line in lines:
                coloured = highlight(f.name, line.text) if highlight is not None else None
                line.html = coloured if coloured is not None else escape(line.text)


def _side_by_side(lines: list[DiffLine]) -> list[tuple[DiffLine | None, DiffLine | None]]:
    """Rows of (old side, new side): context on both, each removed run beside the added run
    that follows it."""
    rows: list[tuple[DiffLine | None, DiffLine | None]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.kind == " ":
            rows.append((line, line))
            i += 1
            continue
        removed: list[DiffLine] = []
        added: list[DiffLine] = []
        while i < len(lines) and lines[i].kind == "-":
            removed.append(lines[i])
            i += 1
        while i < len(lines) and lines[i].kind == "+":
            added.append(lines[i])
            i += 1
        for k in range(max(len(removed), len(added))):
            rows.append(
                (removed[k] if k < len(removed) else None, added[k] if k < len(added) else None)
            )
    return rows


def _cell(line: DiffLine | None, side: str) -> str:
    if line is None:
        return '<td class="ln"></td><td class="code empty"></td>'
    number = line.old if side == "old" else line.new
    kind = {"+": "add", "-": "del", " ": "ctx"}[line.kind]
    return f'<td class="ln">{number}</td><td class="code {kind}">{line.html}</td>'


def render_diff(text: str) -> str:
    """The diff as HTML: a summary of the files, then per file a side-by-side table and a
    unified one (``.diff-split``, ``.diff-unified``: the page's CSS shows one)."""
    head, files = parse_diff(text)
    _highlight(files)
    out: list[str] = []
    if head:
        out.append(f'<pre class="diff-head">{escape(chr(10).join(head).strip())}</pre>')
    if files:
        out.append('<ul class="diff-files">')
        for i, f in enumerate(files):
            out.append(
                f'<li><a href="#diff-file-{i}">{escape(f.name)}</a> '
                f'<span class="add">+{f.added}</span> <span class="del">−{f.removed}</span></li>'
            )
        out.append("</ul>")
    for i, f in enumerate(files):
        out.append(f'<section class="diff-file" id="diff-file-{i}">')
        out.append(f"<h3>{escape(f.name)}</h3>")
        for note in f.notes:
            out.append(f'<p class="muted">{escape(note)}</p>')
        split: list[str] = []
        unified: list[str] = []
        for header, lines in f.hunks:
            hunk = f'<tr class="hunk"><td colspan="{{n}}">{escape(header)}</td></tr>'
            split.append(hunk.format(n=4))
            unified.append(hunk.format(n=3))
            for old_line, new_line in _side_by_side(lines):
                split.append(f"<tr>{_cell(old_line, 'old')}{_cell(new_line, 'new')}</tr>")
            for line in lines:
                kind = {"+": "add", "-": "del", " ": "ctx"}[line.kind]
                mark = {"+": "+", "-": "−", " ": " "}[line.kind]
                unified.append(
                    f'<tr><td class="ln">{line.old or ""}</td><td class="ln">{line.new or ""}'
                    f'</td><td class="code {kind}"><span class="mark" aria-hidden="true">'
                    f"{mark}</span>{line.html}</td></tr>"
                )
        caption = f"<caption>{escape(f.name)}: old on the left, new on the right</caption>"
        out.append(
            f'<table class="diff diff-split">{caption}<tbody>{"".join(split)}</tbody></table>'
        )
        caption = f"<caption>{escape(f.name)}</caption>"
        out.append(
            f'<table class="diff diff-unified">{caption}<tbody>{"".join(unified)}</tbody></table>'
        )
        out.append("</section>")
    if not files and not head:
        out.append(f'<pre class="diff">{escape(text)}</pre>')
    return "\n".join(out)


def highlight_css() -> str:
    """Pygments' colours for the highlighted code (class ``.code``), readable on the diff's
    green and red backgrounds."""
    try:
        from pygments.formatters import HtmlFormatter
    except ImportError:
        return ""
    rules = str(HtmlFormatter(style="default").get_style_defs(".code")).splitlines()
    # Without Pygments' comments (token names such as Generic.Traceback).
    kept = (re.sub(r"\s*/\*.*?\*/", "", rule) for rule in rules if rule.startswith(".code ."))
    return "\n".join(kept)
