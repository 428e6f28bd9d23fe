"""``python -m loopkit.evals`` for real: two cards × two scripted configs that differ in
transcript, on two local workers (each in its own headless desktop), every tool call real; the
eval is killed (SIGKILL) once a case has ended and started again with the same command: it takes
over its workers, which went on with their runs, and finishes; then ``compare`` flags the
regression and the report renders in a real browser.

Kept to 4 cases (one repeat) so it runs in about two minutes on two busy cores: the full matrix
(six cards, two configs, three repeats) is the example in docs/evals.md and the benchmark.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.demo.helpers import ROOT, carrying
from tests.installed import import_or_unavailable

pytestmark = [pytest.mark.integration, pytest.mark.ui, pytest.mark.slow]
import_or_unavailable("dbos", install="loopkit[durable]")

CARDS = ROOT / "examples" / "cards"
SKIPS = ROOT / "examples" / "evals" / "transcripts" / "skips-a-criterion"
#: The good config passes both; the other skips a criterion of the range card only.
KEPT, SKIPPED = "total-ignores-the-discount", "discount-stays-between-0-and-100"


@dataclass
class Evaluated:
    out: Path
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    result: dict[str, object]


def _suite(folder: Path) -> Path:
    suite = folder / "suite.toml"
    suite.write_text(
        f"""name = "two-cards"
cards = ["{CARDS / KEPT}.md", "{CARDS / SKIPPED}.md"]
repeat = 1
round_trips = 0
[limits]
max_rounds = 120
[[configs]]
name = "good"
model = "scripted"
[[configs]]
name = "skips-a-criterion"
model = "scripted"
transcript = "{SKIPS}"
""",
        encoding="utf-8",
    )
    return suite


def _running(pid: int) -> bool:
    """Alive and not a zombie (an adopted worker's end is reaped by whoever adopted it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evaluated]:
    folder = tmp_path_factory.mktemp("eval")
    suite = _suite(folder)
    out = folder / "out"
    command = [sys.executable, "-m", "loopkit.evals", str(suite), "--workers", "2", "--out",
               str(out)]  # fmt: skip
    env = {**os.environ, "EVAL_TEST_MARK": str(folder)}
    env.pop("DISPLAY", None)
    try:
        # First: killed (SIGKILL) once a case has ended; its workers go on with their runs.
        log = (folder / "first.txt").open("w")
        process = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=log, text=True)
        deadline = time.monotonic() + 240
        ended = False
        while time.monotonic() < deadline and process.poll() is None and not ended:
            time.sleep(0.5)
            with contextlib.suppress(OSError, ValueError):
                data = json.loads((out / "eval.json").read_text())
                ended = any(c["status"] in ("passed", "failed") for c in data["cases"])
        assert ended, (folder / "first.txt").read_text()
        workers = {int(p.read_text()) for p in (out / "workers").glob("*.pid")}
        assert len(workers) == 2
        process.kill()
        process.wait()
        log.close()
        first = subprocess.CompletedProcess(
            command, process.returncode, (folder / "first.txt").read_text(), ""
        )
        # Then the same command again: it resumes and finishes.
        second = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                                timeout=400, check=False)  # fmt: skip
        result = json.loads((out / "eval.json").read_text())
        # The second eval took over the first one's workers and stopped them at its end.
        assert "2 local worker(s)" in second.stdout, second.stdout + second.stderr
        assert not list((out / "workers").glob("*.pid"))
        assert not [pid for pid in workers if _running(pid)]
        yield Evaluated(out, first, second, result)
    finally:
        for pid in carrying(str(folder)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _case(result: dict[str, object], key: str) -> dict[str, object]:
    cases = result["cases"]
    assert isinstance(cases, list)
    found = [c for c in cases if c["key"] == key]
    assert found, [c["key"] for c in cases]
    return found[0]


def _verdicts(case: dict[str, object]) -> dict[str, bool | None]:
    graders = case["graders"]
    assert isinstance(graders, list)
    return {g["grader"]: g["passed"] for g in graders}


def test_the_killed_eval_resumes_and_grades_every_case(evaluated: Evaluated) -> None:
    second, result = evaluated.second, evaluated.result
    output = second.stdout + second.stderr
    assert evaluated.first.returncode == -signal.SIGKILL
    assert second.returncode == 1, output  # a case failed: the regression of the second config
    assert result["status"] == "complete", output
    assert len(result["cases"]) == 4  # type: ignore[arg-type]
    good = ("good/total-ignores-the-discount/1", "good/discount-stays-between-0-and-100/1",
            "skips-a-criterion/total-ignores-the-discount/1")  # fmt: skip
    for key in good:
        case = _case(result, key)
        assert case["status"] == "passed", case
        assert _verdicts(case) == {"criteria": True, "checks": True, "tester": True,
                                   "build": True, "limits": True}, key  # fmt: skip
        assert [r["role"] for r in case["runs"]] == ["develop", "test"]  # type: ignore[union-attr]
    bad = _case(result, "skips-a-criterion/discount-stays-between-0-and-100/1")
    assert bad["status"] == "failed"
    verdicts = _verdicts(bad)
    # The runner refused the done: the criterion without evidence fails it, no tester ran; the
    # fix was committed all the same, so the card's own checks and the build pass.
    assert verdicts["criteria"] is False and verdicts["tester"] is False
    assert verdicts["checks"] is True and verdicts["build"] is True
    criteria = next(g for g in bad["graders"] if g["grader"] == "criteria")  # type: ignore[union-attr]
    assert "C3" in criteria["detail"], criteria
    assert [r["role"] for r in bad["runs"]] == ["develop"]  # type: ignore[union-attr]
    assert "C3 not verified" in bad["runs"][0]["reason"]  # type: ignore[index]
    # Figures: scripted costs 0 and says so; tokens and rounds come from the runs' logs.
    for case in result["cases"]:  # type: ignore[union-attr]
        assert case["cost"] == 0.0 and case["rounds"] > 10 and case["input_tokens"] > 0
        assert all(Path(r["log_path"]).is_file() for r in case["runs"])
    assert {c["price"]["note"] for c in result["configs"]} == {"scripted"}  # type: ignore[union-attr]


def test_no_case_ran_twice_and_both_workers_took_work(evaluated: Evaluated) -> None:
    import asyncio

    from loopkit.cards.durable import list_card_runs
    from loopkit.durable.runtime import DurableRuntime

    async def records() -> list[object]:
        async with DurableRuntime(evaluated.result["database"], log_level="CRITICAL") as rt:  # type: ignore[arg-type]
            return list(await list_card_runs(rt))

    found = asyncio.run(records())
    develop: dict[str, int] = {}
    for record in found:
        if record.role == "develop":  # type: ignore[attr-defined]
            develop[record.card] = develop.get(record.card, 0) + 1  # type: ignore[attr-defined]
    assert sorted(develop.values()) == [1, 1, 1, 1], develop  # one develop run per case
    assert len(found) == 7  # 4 develop runs, 3 test runs (none after the refused done)
    assert all(r.state in ("done", "failed") for r in found)  # type: ignore[attr-defined]
    workers = {r.worker.split(":")[0] for r in found}  # type: ignore[attr-defined]
    assert workers == {"eval-1", "eval-2"}, workers


def test_compare_flags_the_regression(evaluated: Evaluated) -> None:
    eval_json = evaluated.out / "eval.json"
    done = subprocess.run(
        [sys.executable, "-m", "loopkit.evals", "compare", str(eval_json), str(eval_json),
         "--old-config", "good", "--new-config", "skips-a-criterion"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("WORSE") and SKIPPED in line and "1/1 → 0/1" in line
               for line in lines), done.stdout  # fmt: skip
    assert any(line.startswith("same") and KEPT in line for line in lines), done.stdout
    assert "1 regression(s)" in done.stdout
    same = subprocess.run(
        [sys.executable, "-m", "loopkit.evals", "compare", str(eval_json), str(eval_json)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert same.returncode == 0 and "0 regression(s)" in same.stdout, same.stdout


def test_junit_xml_has_a_failure_for_the_failed_case(evaluated: Evaluated) -> None:
    import xml.etree.ElementTree as ET

    root = ET.parse(evaluated.out / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"good", "skips-a-criterion"}
    assert suites["good"].get("failures") == "0" and suites["good"].get("tests") == "2"
    failed = [
        c for c in suites["skips-a-criterion"].iter("testcase") if c.find("failure") is not None
    ]
    assert [c.get("name") for c in failed] == [f"{SKIPPED} #1"]
    assert "criteria:" in failed[0].find("failure").get("message", "")  # type: ignore[union-attr]


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
def test_the_report_renders_its_plots_and_links_every_run(evaluated: Evaluated) -> None:
    """The HTML report in a real browser: every plot draws (bars with their intervals, the
    tokens-per-round lines), nothing is fetched from outside, and each run of each case links
    to its report and its log, which exist."""
    from PIL import Image

    playwright = import_or_unavailable("playwright.sync_api", install="the dev extra")
    report = evaluated.out / "report.html"
    screenshot = evaluated.out / "report.png"
    outside: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on(
            "request", lambda r: outside.append(r.url) if not r.url.startswith("file:") else None
        )
        page.goto(report.as_uri())
        plots = page.locator("svg.plot")
        kinds = [plots.nth(i).get_attribute("data-plot") for i in range(plots.count())]
        assert kinds == ["pass-rate", "pass-rate-per-card", "cost", "time", "tokens-per-round"]
        for i in range(plots.count()):
            box = plots.nth(i).bounding_box()
            assert box is not None and box["width"] > 600 and box["height"] > 250, kinds[i]
        # the pass rate per config, with an interval over the cases
        bars = page.locator('svg[data-plot="pass-rate"] rect.bar')
        rates = {bars.nth(i).get_attribute("data-series"): float(bars.nth(i).get_attribute("data-value") or -1)
                 for i in range(bars.count())}  # fmt: skip
        assert rates == {"good": 1.0, "skips-a-criterion": 0.5}
        assert page.locator('svg[data-plot="pass-rate"] g.interval').count() == 2
        per_card = page.locator(
            f'svg[data-plot="pass-rate-per-card"] rect.bar[data-series="skips-a-criterion"]'
            f'[data-group="{SKIPPED}"]'
        )
        assert per_card.get_attribute("data-value") == "0"
        heights = [
            b["height"] for b in (bars.nth(i).bounding_box() for i in range(bars.count())) if b
        ]
        assert len(heights) == 2 and heights[0] > 1.5 * heights[1] > 0  # drawn to scale
        assert page.locator('svg[data-plot="time"] rect.bar').count() == 4
        lines = page.locator('svg[data-plot="tokens-per-round"] polyline.line')
        assert lines.count() == 2
        assert all(int(lines.nth(i).get_attribute("data-points") or 0) > 10 for i in range(2))
        # every run of every case links to its report and its log
        rows = page.locator("tr.case")
        assert rows.count() == 4
        checked = 0
        for i in range(rows.count()):
            runs = rows.nth(i).locator("div.run")
            assert runs.count() >= 1
            for j in range(runs.count()):
                for kind in ("report", "log"):
                    link = runs.nth(j).locator(f'a.run-link[data-kind="{kind}"]')
                    where = (rows.nth(i).get_attribute("data-case"), j, kind)
                    if kind == "report" and link.count() == 0:
                        # only the develop run whose done was refused wrote no report
                        assert where[:2] == (f"skips-a-criterion/{SKIPPED}/1", 0), where
                        assert runs.nth(j).locator(".no-report").count() == 1
                        continue
                    assert link.count() == 1, where
                    target = (report.parent / (link.get_attribute("href") or "")).resolve()
                    assert target.is_file(), target
                    checked += 1
        assert checked == 2 * 7 - 1  # 7 runs (4 develop, 3 test), one without a report
        page.screenshot(path=str(screenshot), full_page=True)
        # a test run's report opens from its link
        page.locator('tr.case[data-case="good/total-ignores-the-discount/1"] div.run').nth(1).locator(
            'a.run-link[data-kind="report"]').click()  # fmt: skip
        page.wait_for_load_state()
        assert page.url.endswith("report.html") and "test-report" in page.url
        assert "passed" in page.inner_text("body").lower()
        browser.close()
    assert outside == []
    # the plots are drawn in colour on the page, not blank
    image = Image.open(screenshot).convert("RGB")
    colours = {
        image.getpixel((x, y))
        for x in range(0, image.width, 7)
        for y in range(0, min(image.height, 1400), 7)
    }
    assert (0, 114, 178) in colours and (230, 159, 0) in colours  # the two configs' bars
