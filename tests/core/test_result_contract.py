"""The RESULT contract: a run is done only when the whole last line is ``RESULT: done``.

Each case pins one decision of :func:`loopkit.parse_result`; a regex that matches a prefix, a
``search`` instead of a ``match``, or a looser strip of the line fails one of them.
"""

from __future__ import annotations

import pytest

from loopkit import parse_result
from loopkit.cards import RunResult

NOT_A_RESULT_LINE = "the final answer did not end with a RESULT line (last line: {!r})"
MALFORMED = "the last line is not 'RESULT: done' or 'RESULT: failed: <reason>' (last line: {!r})"


@pytest.mark.parametrize(
    "text",
    [
        "RESULT: done",
        "All criteria verified.\nRESULT: done",
        "RESULT: done\n\n  \n",  # trailing blank lines are not a last line
        "   RESULT: done   ",
        "RESULT:done",
        "RESULT:   done",
        "result: DONE",  # the keywords are case-insensitive
        "**RESULT: done**",  # markdown emphasis around the whole line
        "`RESULT: done`",
        "_RESULT: done_",
        "Checked.\r\nRESULT: done\r\n",
    ],
)
def test_done_only_for_the_whole_line(text: str) -> None:
    assert parse_result(text) == RunResult(status="done")


@pytest.mark.parametrize(
    "line",
    [
        "RESULT: done, mostly",
        "RESULT: done.",
        "RESULT: done!",
        "RESULT: done (except the dialog)",
        "RESULT: done: two criteria not checked",
        "RESULT: donee",
        "RESULT: done-ish",
        "RESULT: done failed",
        "RESULT: undone",
    ],
)
def test_done_with_anything_after_it_is_not_done(line: str) -> None:
    result = parse_result(f"I changed the file.\n{line}")
    assert result == RunResult(status="failed", reason=MALFORMED.format(line))


@pytest.mark.parametrize(
    "line",
    [
        "Result is: RESULT: done",  # RESULT not at the start of the line
        "> RESULT: done",  # a quote is not the line
        "- RESULT: done",
        "RESULTS: done",
        "RESULT done",  # no colon
        "The RESULT: done",
    ],
)
def test_a_line_that_only_contains_the_result_is_not_the_result(line: str) -> None:
    result = parse_result(f"Work finished.\n{line}")
    assert result.status == "failed"
    assert result.reason in (NOT_A_RESULT_LINE.format(line), MALFORMED.format(line))


def test_the_result_line_must_be_the_last_line() -> None:
    assert parse_result("RESULT: done\nbut then more") == RunResult(
        status="failed", reason=NOT_A_RESULT_LINE.format("but then more")
    )
    # A RESULT line closed into a code block ends with the fence: not done, and the reason
    # quotes the fence as it was written (not an empty string).
    fenced = parse_result("```\nRESULT: done\n```")
    assert fenced == RunResult(status="failed", reason=NOT_A_RESULT_LINE.format("```"))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("RESULT: failed: build broke", "build broke"),
        ("RESULT: failed:build broke", "build broke"),
        ("RESULT: failed :  build broke  ", "build broke"),
        ("RESULT: FAILED: the dialog: it never opens", "the dialog: it never opens"),
        ("**RESULT: failed: build broke**", "build broke"),
        ("RESULT: failed", "the model gave no reason"),
        ("RESULT: failed:", "the model gave no reason"),
        ("RESULT: failed:    ", "the model gave no reason"),
    ],
)
def test_failed_with_and_without_a_reason(line: str, reason: str) -> None:
    assert parse_result(f"x\n{line}") == RunResult(status="failed", reason=reason)


@pytest.mark.parametrize(
    "line", ["RESULT: failed build broke", "RESULT: failed - build broke", "RESULT: failedx"]
)
def test_failed_without_the_colon_is_malformed(line: str) -> None:
    assert parse_result(line) == RunResult(status="failed", reason=MALFORMED.format(line))


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "\t\n  \n"])
def test_an_empty_answer_has_no_result_line(text: str) -> None:
    assert parse_result(text) == RunResult(
        status="failed", reason="the final answer was empty: no RESULT line"
    )


def test_a_long_last_line_is_quoted_shortened() -> None:
    line = "I did many things " * 20
    result = parse_result(line)
    shown = line.strip()[:117] + "..."
    assert result.reason == NOT_A_RESULT_LINE.format(shown)
    exactly = "y" * 120  # at the limit: quoted whole
    assert parse_result(exactly).reason == NOT_A_RESULT_LINE.format(exactly)
    assert parse_result("y" * 121).reason == NOT_A_RESULT_LINE.format("y" * 117 + "...")


def test_result_lines_round_trip() -> None:
    for line in ("RESULT: done", "RESULT: failed: build broke"):
        assert parse_result(line).line() == line
    assert RunResult(status="failed").line() == "RESULT: failed: no reason given"
    assert parse_result("RESULT: done").done
    assert not parse_result("RESULT: failed: x").done
