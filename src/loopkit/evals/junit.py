"""An eval as JUnit XML for CI: one test suite per config, one test case per case (card and
repeat); a failed case is a ``<failure>`` naming its failed graders, a stopped one ``<skipped>``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from loopkit.evals.results import EvalResult

__all__ = ["junit_xml", "write_junit"]


def junit_xml(result: EvalResult) -> str:
    """The eval's JUnit XML document."""
    root = ET.Element("testsuites", name=f"loopkit eval {result.suite}")
    for config in result.configs:
        cases = [c for c in result.cases if c.config == config.name]
        failures = sum(1 for c in cases if c.status == "failed")
        skipped = sum(1 for c in cases if not c.ended or c.status == "stopped")
        suite = ET.SubElement(
            root, "testsuite", name=config.name, tests=str(len(cases)),
            failures=str(failures), errors="0", skipped=str(skipped),
            time=f"{sum(c.wall_seconds for c in cases):.2f}",
        )  # fmt: skip
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="model", value=config.model)
        ET.SubElement(properties, "property", name="price", value=config.price.note)
        for case in cases:
            element = ET.SubElement(
                suite, "testcase", classname=f"{result.suite}.{config.name}",
                name=f"{case.card} #{case.repeat}", time=f"{case.wall_seconds:.2f}",
            )  # fmt: skip
            if case.status == "failed":
                failed = case.failed_graders()
                message = "; ".join(f"{g.grader}: {g.detail}" for g in failed) or "failed"
                failure = ET.SubElement(element, "failure", message=message[:1000])
                failure.text = "\n".join(
                    [f"{g.grader}: {'pass' if g.passed else 'n/a' if g.passed is None else 'FAIL'}"
                     f" {g.detail}" for g in case.graders]
                    + [f"run {r.run_id} ({r.role}) {r.state}: {r.log_path}" for r in case.runs]
                )  # fmt: skip
            elif case.status != "passed":
                ET.SubElement(element, "skipped", message=case.note or case.status)
            out = ET.SubElement(element, "system-out")
            out.text = "\n".join(f"{r.role} run {r.run_id}: {r.log_path}" for r in case.runs)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(result: EvalResult, path: Path) -> Path:
    path.write_text(junit_xml(result), encoding="utf-8")
    return path
