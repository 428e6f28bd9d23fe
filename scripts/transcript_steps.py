"""The steps the bundled transcripts are made of: tool calls with their expected results, turns,
the reads and edits of a fix (derived from the app source by :func:`patch`), the start and the
end of a develop run, and the test role's own steps. make_transcripts.py, more_transcripts.py and
tester_transcripts.py build their transcripts from them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopkit_tools import ToolsConfig, page_lines

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "invoice_app"


#: The (old, new) pairs of the patches made since the last :func:`edits` (one fix at a time).
PATCHES: list[tuple[str, str]] = []


def patch(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise SystemExit(f"make_transcripts: the app changed; cannot find exactly one {old!r}")
    PATCHES.append((old, new))
    return text.replace(old, new)


def edits(file: str, fix: Callable[[], str]) -> list[dict[str, Any]]:
    """The edit_file calls that make ``fix``'s change to ``file``, one per patch, in order (each
    ``old`` is unique in the file as it is at that edit, as :func:`patch` checks)."""
    PATCHES.clear()
    fix()
    path = f"invoice_app/{file}"
    return [
        call("edit_file", ok(f"Edited {path}"), path=path, old=old, new=new) for old, new in PATCHES
    ]


def call(name: str, expect: dict[str, Any] | None = None, /, **arguments: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "arguments": arguments}
    if expect:
        c["expect"] = expect
    return c


def ok(*fragments: str) -> dict[str, Any]:
    """The result must not be an error and must contain every fragment."""
    return {"error": False, "contains": list(fragments)}


def acted(*fragments: str, **subset: Any) -> dict[str, Any]:
    """An action's JSON answer: success and the fields given (a subset), containing fragments."""
    return {"error": False, "json": {"success": True, **subset}, "contains": list(fragments)}


NO_WINDOW_OPENED = {"windows": {"opened": []}}


def text_of(target: str, *fragments: str) -> dict[str, Any]:
    return call("ui_get_text", ok(*fragments), target=target)


def named(c: dict[str, Any], ident: str) -> dict[str, Any]:
    """``c`` with the call id ``ident``: a check the run cites as evidence (record_evidence)."""
    return {**c, "id": ident}


def evidence(**criteria: list[str]) -> dict[str, Any]:
    """The turn that records, per criterion (``C1=[ids]``), the checks that show it."""
    return turn(
        *(
            call("record_evidence", ok(f"{criterion}: evidence recorded"), criterion=criterion,
                 calls=ids)
            for criterion, ids in criteria.items()
        ),
        text="Recording the checks that show each criterion, for the runner to check and replay.",
    )  # fmt: skip


def turn(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    t: dict[str, Any] = {"calls": list(calls)}
    if text:
        t["text"] = text
    return t


def read_in_parts(path: str, marker: str) -> list[dict[str, Any]]:
    """read_file calls for every part of a file, as the tool pages it (parts of whole lines)."""
    text = (ROOT / "examples" / path).read_text(encoding="utf-8")
    limit = ToolsConfig().max_read_chars
    calls, start, column = [], 1, 1
    while True:
        part = page_lines(text, start, None, limit, start_column=column)
        note = part.rsplit("\n", 1)[-1]
        fragments = [marker] if marker in part else []
        arguments: dict[str, Any] = {"path": path}
        if start != 1:
            arguments["start_line"] = start
        if column != 1:
            arguments["start_column"] = column
        calls.append(
            call(
                "read_file", ok(*fragments, *([note] if note.startswith("[") else [])), **arguments
            )
        )
        where = re.search(r"start_line=(\d+)(?:, start_column=(\d+))?", note)
        if where is None:
            return calls
        start, column = int(where.group(1)), int(where.group(2) or 1)


#: Lines read from the top of a long file (its docstring and imports), and around each place
#: a fix changes.
HEAD_LINES = 30
CONTEXT_LINES = 8


def first_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip())


def read_where_the_fix_goes(file: str, fix: Callable[[], str]) -> list[dict[str, Any]]:
    """The turns that read what the fix needs: a file that fits in one read_file part whole; a
    longer one as a careful model does, by finding where each change goes (search_files, one
    search for the first line of each patched piece), then reading the file's top and each
    place with some lines around it (read_file with start_line and max_lines)."""
    path = f"invoice_app/{file}"
    text = (ROOT / "examples" / path).read_text(encoding="utf-8")
    PATCHES.clear()
    fix()
    patches = list(PATCHES)
    if len(text) <= ToolsConfig().max_read_chars:
        return [turn(*read_in_parts(path, first_line(patches[0][0])))]
    searches, ranges = [], [(1, HEAD_LINES)]
    for old, _new in patches:
        if text.count(old) != 1:
            continue  # a piece that an earlier patch makes: read with that one
        needle = first_line(old)
        definition = re.match(r"(?:async )?(?:def|class) \w+", needle)
        needle = definition.group(0) if definition else needle  # as one would search for it
        start = text[: text.index(old)].count("\n") + 1
        line = start + next(i for i, s in enumerate(old.splitlines()) if s.strip())
        end = start + old.rstrip("\n").count("\n")
        searches.append(
            call("search_files", ok(f"{path}:{line}: "), text=needle, folder="invoice_app")
        )
        ranges.append((max(1, start - CONTEXT_LINES), end + CONTEXT_LINES))
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    reads = []
    for first, last in merged:
        shown = [
            first_line(old) for old, _ in patches if first_line(old) in _lines(text, first, last)
        ]
        arguments: dict[str, Any] = {"path": path, "max_lines": last - first + 1}
        if first != 1:
            arguments["start_line"] = first
        reads.append(call("read_file", ok(*shown), **arguments))
    return [
        turn(*searches, text=f"{file} is long: finding where the change goes."),
        turn(*reads),
    ]


def _lines(text: str, first: int, last: int) -> str:
    return "\n".join(text.splitlines()[first - 1 : last])


def common_start(file: str, fix: Callable[[], str]) -> list[dict[str, Any]]:
    return [
        turn(
            call(
                "list_files",
                ok("invoice_app/main_window.py", "invoice_app/model.py"),
                folder="invoice_app",
            ),
            call("read_file", ok("Every control has an accessible id"), path="docs/CODING.md"),
            text="I will look at the app's files first.",
        ),
        *read_where_the_fix_goes(file, fix),
        turn(call("start_app", ok("The app is running")), text="Now the live app."),
        turn(call("ui_list_windows", ok("Invoice Editor"))),
    ]


def build_and_restart() -> list[dict[str, Any]]:
    return [
        turn(call("stop_app", ok("no process of it is left"))),
        turn(call("build_app", ok("Build succeeded"))),
        turn(call("start_app", ok("The app is running")), text="Verifying live."),
    ]


def finish(
    title: str, body: str, file: str, summary: str, note: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Screenshot, stop, (a note,) commit, the RESULT. With a note the commit takes the note,
    its topic file and the router along."""
    committed = ok("1 file(s)", f"invoice_app/{file}")
    noting = []
    if note is not None:
        noting = [turn(note, text="Keeping what I checked for the next run.")]
        topic = note["arguments"]["topic"]
        committed = ok("4 file(s)", f"invoice_app/{file}", "notes/README.md", f"notes/{topic}.md")
    return [
        turn(call("ui_screenshot", ok(".png"))),
        turn(call("stop_app", ok("no process of it is left"))),
        *noting,
        turn(call("git_commit", committed, message=f"card: {title}\n\n{body}")),
        {"text": f"{summary}\n\nRESULT: done"},
    ]


# -- the test role's steps --------------------------------------------------------------------


#: The final message's report line: a transcript cannot know the run's folder (the demo prints
#: the report's path after the summary).
REPORT_LINE = (
    "Report: the path write_test_report answered (test-report/report.html in the run's folder)."
)


def record_step(
    number: int,
    description: str,
    evidence: str,
    *,
    passed: bool = True,
    screenshot: bool = False,
    criterion: str = "",
) -> dict[str, Any]:
    """The tester's ``record_step`` call of step ``number``."""
    arguments: dict[str, Any] = {
        "description": description,
        "passed": passed,
        "evidence": evidence,
    }
    if criterion:
        arguments["criterion"] = criterion
    if screenshot:
        arguments["screenshot"] = "latest"
    verdict = "passed" if passed else "FAILED"
    return call("record_step", ok(f"step {number} recorded ({verdict})"), **arguments)


def memory_first(symptom: str) -> list[dict[str, Any]]:
    """A test run's first turns: the notes' router, then a search for ``symptom``."""
    return [
        turn(
            call("read_router", {"error": False}),
            text="Memory first: the notes before the first click.",
        ),
        turn(call("search_notes", {"error": False}, symptom=symptom)),
    ]
