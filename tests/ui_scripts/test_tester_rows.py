"""An agent's test run in the findings database: a row from its start (``running``) that always
ends with the run's real verdict (``passed``, ``failed``, ``error``, ``cancelled``), also when
the run ends before its report; the report lists each acceptance criterion with its evidence and
a screenshot cropped to the app's windows. The real SQLite store, real PNG files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from loopkit.abstractions import ToolError
from loopkit_ui import tester_tools
from loopkit_ui.scripts import ResultStore
from loopkit_ui.tester_report import crop_to_windows

CRITERIA = [
    {"id": "C1", "text": "The dialog names the item.", "manual": False},
    {"id": "C2", "text": "No keeps the row.", "manual": False},
    {"id": "C3", "text": "The code has a docstring.", "manual": True},
]


def make_tools(tmp_path: Path, **overrides: Any) -> tester_tools.TesterTools:
    settings: dict[str, Any] = {
        "name": "Deleting an item should ask first",
        "report_dir": tmp_path / "report",
        "database": tmp_path / "results.sqlite",
        "scripts_dir": tmp_path / "ui_tests",
        "runner_out": tmp_path / "ui-runs",
        "ui_output_dirs": [tmp_path / "ui"],
        "criteria": CRITERIA,
        **overrides,
    }
    return tester_tools.TesterTools(tester_tools.TesterConfig(**settings))


def call(tools: tester_tools.TesterTools, name: str, /, **arguments: Any) -> str:
    tool = next(t for t in tools.tools if t.name == name)
    return str(asyncio.run(tool.invoke(arguments)))


def rows(tmp_path: Path) -> list[tuple[str, str, str | None]]:
    return [
        (r["status"], r["script"], r["error"])
        for r in ResultStore(tmp_path / "results.sqlite").runs()
    ]


def desktop_shot(path: Path) -> Path:
    """A 1280x1024 screenshot of a desktop: black, with a 640x600 window at the top left and a
    small dialog beside it, as Xvfb shows the app."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (1280, 1024), (0, 0, 0))
    image.paste(Image.new("RGB", (640, 600), (230, 230, 230)), (0, 0))
    image.paste(Image.new("RGB", (300, 120), (200, 210, 255)), (660, 200))
    image.save(path)
    return path


async def run_through(tools: tester_tools.TesterTools, error: BaseException | None) -> None:
    async with tools:
        if error is not None:
            raise error


def test_the_row_is_written_at_the_start_and_ends_with_the_runs_verdict(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)

    async def start() -> None:
        await tools.__aenter__()

    asyncio.run(start())
    assert rows(tmp_path) == [
        ("running", "agent test run: Deleting an item should ask first", None)
    ]
    call(tools, "record_finding", kind="defect", title="Wrong total", summary="The total is off.")
    assert rows(tmp_path)[0][0] == "running"  # a finding is no verdict
    asyncio.run(tools.__aexit__(None, None, None))
    assert rows(tmp_path)[0][0::2] == ("failed", "the run ended before its report")
    tools.finish(False, "a discount above 100 is accepted")
    assert rows(tmp_path)[0][0::2] == ("failed", "a discount above 100 is accepted")
    tools.finish(True)
    assert rows(tmp_path)[0][0::2] == ("passed", None)


@pytest.mark.parametrize(
    ("error", "status", "why"),
    [
        (asyncio.CancelledError(), "cancelled", "the run was cancelled"),
        (RuntimeError("the UI server died"), "error", "RuntimeError: the UI server died"),
    ],
)
def test_a_run_that_ends_by_an_exception_says_so(
    tmp_path: Path, error: BaseException, status: str, why: str
) -> None:
    with pytest.raises(type(error)):
        asyncio.run(run_through(make_tools(tmp_path), error))
    assert [(r[0], r[2]) for r in rows(tmp_path)] == [(status, why)]


def test_a_run_with_no_finding_and_no_report_still_has_its_row(tmp_path: Path) -> None:
    asyncio.run(run_through(make_tools(tmp_path), None))
    assert [r[0] for r in rows(tmp_path)] == ["failed"]


def test_steps_name_their_criteria_and_the_report_lists_each_with_its_evidence(
    tmp_path: Path,
) -> None:
    tools = make_tools(tmp_path)
    desktop_shot(tmp_path / "ui" / "screenshot-001.png")
    answer = call(
        tools, "record_step", description="The dialog asks about Consulting", passed=True,
        evidence='Delete the item "Consulting"?', screenshot="latest", criterion="c1",
    )  # fmt: skip
    assert answer == "step 1 recorded (passed) [C1]: The dialog asks about Consulting"
    with pytest.raises(ToolError, match=r"criterion C9: not a criterion here \(C1, C2, C3\)"):
        call(tools, "record_step", description="x", passed=True, criterion="C9")
    tools.regressions.append({"status": "passed"})  # as write_regression_script leaves it
    with pytest.raises(ToolError, match="C2 not checked: a passed test checks every criterion"):
        call(tools, "write_test_report", verdict="passed", summary="All good.")
    call(tools, "record_step", description="No keeps the row", passed=True, criterion="C2")
    call(tools, "write_test_report", verdict="passed", summary="Both criteria hold.")
    html = (tmp_path / "report" / "report.html").read_text("utf-8")
    assert '<tr id="criterion-C1"><td>C1</td><td>The dialog names the item.</td>' in html
    assert "Delete the item &quot;Consulting&quot;?" in html
    assert '<td class="unverified">unverified</td>' in html  # C3, manual
    assert [(c.id, c.status, c.steps) for c in tools.result.criteria] == [
        ("C1", "passed", [0]), ("C2", "passed", [1]), ("C3", "unverified", []),
    ]  # fmt: skip
    # The screenshot in the report is the app's windows, not the whole desktop.
    shot = tmp_path / "report" / tools.result.criteria[0].screenshot
    with Image.open(shot) as image:
        assert image.size == (960, 600)
    assert rows(tmp_path)[0][0] == "passed"


def test_a_failed_check_fails_its_criterion(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    call(tools, "record_step", description="first look", passed=True, criterion="C1")
    call(tools, "record_step", description="the name is wrong", passed=False, criterion="C1")
    call(tools, "record_step", description="again", passed=True, criterion="C1")
    assert tools.result.criteria[0].status == "failed"


def test_cropping_keeps_a_screenshot_that_is_all_window(tmp_path: Path) -> None:
    path = tmp_path / "window.png"
    Image.new("RGB", (640, 600), (230, 230, 230)).save(path)
    crop_to_windows(path)
    with Image.open(path) as image:
        assert image.size == (640, 600)


def test_a_run_taken_up_in_a_new_process_is_the_same_row(tmp_path: Path) -> None:
    """A durable test run resumed in a new process: its tools there read the record the first
    process kept from its start, so the run is one row; what the first process wrote when it
    stopped (no verdict yet) is ``running`` again, and only the run's end is final."""
    first = make_tools(tmp_path)
    asyncio.run(first.__aenter__())
    assert make_tools(tmp_path).result.run_id == first.result.run_id  # killed here: one row
    with pytest.raises(asyncio.CancelledError):  # stopped: the tools' exit says cancelled
        asyncio.run(run_through(first, asyncio.CancelledError()))
    assert [r[0] for r in rows(tmp_path)] == ["cancelled"]
    first.interrupted("interrupted: it goes on when resumed")
    assert [(r[0], r[2]) for r in rows(tmp_path)] == [
        ("running", "interrupted: it goes on when resumed")
    ]
    second = make_tools(tmp_path)  # the resumed run's process
    assert second.result.run_id == first.result.run_id
    assert (second.result.status, second.result.error) == ("running", None)
    asyncio.run(run_through(second, None))  # the tools close before the run's verdict
    second.end("error", "RuntimeError: the UI server died")
    third = make_tools(tmp_path)  # its end replayed once more: the verdict stays
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run_through(third, asyncio.CancelledError()))
    third.interrupted("interrupted again")
    assert [(r[0], r[2]) for r in rows(tmp_path)] == [("error", "RuntimeError: the UI server died")]


class DBOSWorkflowCancelledError(Exception):
    """Named as DBOS's (the tools know it by name: they do not import the engine)."""


def test_a_durable_engines_cancel_is_a_cancel(tmp_path: Path) -> None:
    with pytest.raises(DBOSWorkflowCancelledError):
        asyncio.run(run_through(make_tools(tmp_path), DBOSWorkflowCancelledError("cancelled")))
    assert [(r[0], r[2]) for r in rows(tmp_path)] == [("cancelled", "the run was cancelled")]
