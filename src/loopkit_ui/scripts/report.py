"""The HTML report of a run and the GIF of its screenshots.

The report is one self-contained HTML file in the run folder; screenshots are linked by relative
path, so the folder can be zipped and sent as it is. It is written from a redacted copy of the run
(:func:`~loopkit_ui.scripts.redact.redacted_result`): no secret reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from loopkit.redaction import Redactor
from loopkit_ui.scripts.findings import normalise_stack_line
from loopkit_ui.scripts.redact import redacted_result
from loopkit_ui.scripts.results import RunResult

__all__ = ["write_gif", "write_report"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;width:100%} td,th{border:1px solid #ccc;padding:4px 6px;
vertical-align:top;text-align:left;font-size:.9em} th{background:#f3f3f3}
.passed{color:#196c2e}.failed,.error{color:#b00020;font-weight:bold}.skipped{color:#888}
.badge{padding:2px 8px;border-radius:4px;color:#fff}.b-passed{background:#2e7d32}
.b-failed,.b-error{background:#c62828} pre{white-space:pre-wrap;margin:0;font-size:.85em}
img.thumb{max-width:220px;border:1px solid #aaa} .warning{color:#a15c00}
.expected{color:#666;font-style:italic} img.criterion-shot{max-width:320px;border:1px solid #aaa}
.unchecked{color:#b00020}.unverified{color:#a15c00}.b-running,.b-cancelled{background:#757575}
"""


def _step_rows(result: RunResult) -> list[str]:
    rows = []
    by_fp = {f.fingerprint: f for f in result.findings}
    for step in result.steps:
        indent = "&nbsp;" * 4 * step.depth
        shot = (
            f'<a href="{escape(step.screenshot)}"><img class="thumb" '
            f'src="{escape(step.screenshot)}" alt="screenshot after step {step.index}"></a>'
            if step.screenshot
            else ""
        )
        notes = []
        for fp in dict.fromkeys(step.findings):
            finding = by_fp.get(fp)
            if finding is not None:
                css = "expected" if finding.expected else finding.severity
                notes.append(
                    f'<div class="{css}">{escape(finding.kind)}: {escape(finding.summary)}</div>'
                )
        rows.append(
            "<tr>"
            f"<td>{step.index}</td><td>{escape(step.phase)}</td>"
            f"<td>{indent}<code>{escape(step.path)}</code><br>{indent}{escape(step.label)}</td>"
            f'<td class="{step.status}">{step.status}</td>'
            f"<td>{step.ms:.0f} ms<br><small>oracles {step.oracle_ms:.0f} ms</small></td>"
            f"<td><pre>{escape(step.message)}</pre>{''.join(notes)}</td>"
            f"<td>{shot}</td>"
            "</tr>"
        )
    return rows


def _finding_rows(result: RunResult) -> list[str]:
    rows = []
    counts: dict[str, int] = {}
    for finding in result.findings:
        counts[finding.fingerprint] = counts.get(finding.fingerprint, 0) + 1
    for finding in result.unique_findings():
        rows.append(
            "<tr>"
            f"<td><code>{finding.fingerprint}</code></td>"
            f'<td class="{finding.severity}">{escape(finding.kind)}'
            f"{' (expected)' if finding.expected else ''}</td>"
            f"<td>{escape(finding.oracle)}</td>"
            f"<td>{escape(finding.title)}</td>"
            f"<td><code>{escape(normalise_stack_line(finding.stack_line))}</code></td>"
            f"<td>{escape(finding.step or '')}</td>"
            f"<td>{escape(finding.summary)}<details><summary>detail</summary>"
            f"<pre>{escape(finding.detail)}</pre></details></td>"
            f"<td>{counts[finding.fingerprint]}</td>"
            "</tr>"
        )
    return rows


def write_report(result: RunResult, path: Path, *, redactor: Redactor | None = None) -> Path:
    """Write the run's HTML report to ``path``, every text redacted by ``redactor`` (default: a
    :class:`~loopkit.redaction.Redactor` reading the environment now)."""
    result = redacted_result(result, redactor)
    run_dir = Path(result.run_dir)
    gif = (
        f'<p><img src="{escape(str(Path(result.gif).relative_to(run_dir)))}" '
        f'alt="animation of the screenshots"></p>'
        if result.gif
        else ""
    )
    findings = _finding_rows(result)
    findings_table = (
        "<table><tr><th>fingerprint</th><th>kind</th><th>oracle</th><th>title</th>"
        "<th>first stack line</th><th>step</th><th>summary</th><th>times</th></tr>"
        + "".join(findings)
        + "</table>"
        if findings
        else "<p>None.</p>"
    )
    notes = "".join(f"<li>{escape(note)}</li>" for note in result.notes)
    videos = "".join(
        f'<figure><video controls preload="metadata" width="640" src="{escape(video)}"></video>'
        f'<figcaption><a href="{escape(video)}">{escape(video)}</a></figcaption></figure>'
        for video in result.videos
    )
    error = f'<p class="error">{escape(result.error)}</p>' if result.error else ""
    criteria = _criteria_section(result)
    html = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{escape(result.name)}: {result.status}</title><style>{_STYLE}</style></head>
<body>
<h1>{escape(result.name)} <span class="badge b-{result.status}">{result.status}</span></h1>
<p>Script <code>{escape(result.script)}</code> &middot; run <code>{escape(result.run_id)}</code>
&middot; started {escape(result.started)} &middot; {result.ms / 1000:.1f} s &middot;
steps: {result.count("passed")} passed, {result.count("failed")} failed,
{result.count("skipped")} skipped &middot; findings: {len(findings)}
&middot; app exit status: {result.app_exit}</p>
{error}
{criteria}
<h2>Steps</h2>
<table><tr><th>#</th><th>phase</th><th>step</th><th>status</th><th>time</th>
<th>result</th><th>screenshot</th></tr>
{"".join(_step_rows(result))}
</table>
<h2>Oracle findings</h2>
{findings_table}
<h2>Notes</h2>
<ul>{notes or "<li>none</li>"}</ul>
<h2>Screenshots</h2>
{gif or "<p>No screenshots.</p>"}
<h2>Videos</h2>
{videos or "<p>No videos.</p>"}
</body></html>
"""
    path.write_text(html, encoding="utf-8")
    return path


def _criteria_section(result: RunResult) -> str:
    """The acceptance criteria of an agent's test run, each with its evidence (the steps that
    checked it, what they read back) and a screenshot of the app window at one of them."""
    if not result.criteria:
        return ""
    rows = []
    for criterion in result.criteria:
        steps = [result.steps[i] for i in criterion.steps if i < len(result.steps)]
        evidence = (
            "".join(
                f'<li class="{step.status}">{escape(step.label)}'
                + (f": <code>{escape(step.message[:500])}</code>" if step.message else "")
                + "</li>"
                for step in steps
            )
            or "<li>no step checked it</li>"
        )
        shot = (
            f'<a href="{escape(criterion.screenshot)}"><img class="criterion-shot" '
            f'src="{escape(criterion.screenshot)}" alt="{escape(criterion.id)}"></a>'
            if criterion.screenshot
            else ""
        )
        rows.append(
            f'<tr id="criterion-{escape(criterion.id)}"><td>{escape(criterion.id)}</td>'
            f"<td>{escape(criterion.text)}</td>"
            f'<td class="{criterion.status}">{criterion.status}</td>'
            f"<td><ul>{evidence}</ul></td><td>{shot}</td></tr>"
        )
    return (
        '<h2>Acceptance criteria</h2><table id="criteria"><tr><th>id</th><th>criterion</th>'
        "<th>verdict</th><th>evidence</th><th>the app</th></tr>" + "".join(rows) + "</table>"
    )


def write_gif(images: Sequence[Path], path: Path, *, frame_ms: int = 800) -> Path:
    """An animated GIF of ``images`` (padded to one size, in order), looping forever."""
    from PIL import Image

    frames = []
    for image_path in images:
        with Image.open(image_path) as image:
            frames.append(image.convert("RGB"))
    if not frames:
        raise ValueError("no screenshots to make a GIF from")
    width = max(f.width for f in frames)
    height = max(f.height for f in frames)
    padded = []
    for frame in frames:
        canvas = Image.new("RGB", (width, height), "white")
        canvas.paste(frame, (0, 0))
        padded.append(canvas.quantize(colors=256, method=Image.Quantize.MEDIANCUT))
    padded[0].save(
        path,
        save_all=True,
        append_images=padded[1:],
        duration=frame_ms,
        loop=0,
        optimize=False,
    )
    return path
