"""The eval's HTML report: one self-contained file (inline CSS and SVG, no script, nothing
fetched) with the pass rate per config and its 95 % interval over the repeats, the pass rate per
card and config, cost and time per card and config, tokens per round, and a table of every case
whose runs link to their reports and logs."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

from loopkit.evals.results import CaseResult, EvalResult, PassRate
from loopkit.evals.svg import PALETTE, Series, bar_chart, line_chart

__all__ = ["render_report", "write_report"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1b1b;max-width:1200px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555} table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4} .num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#0a7a28;font-weight:600} .fail{color:#b00020;font-weight:600} .na{color:#777}
.rate{font-weight:600} .plots{display:flex;flex-wrap:wrap;gap:16px}
svg.plot{background:#fff;border:1px solid #e3e3e3} .grid{stroke:#eee}
.tick,.group,.legend,.value,.axis,.none{font-size:11px;fill:#444} .plot-title{font-size:13px;
font-weight:600} .interval line{stroke:#222;stroke-width:1.5} td.cell-pass{background:#e6f4ea}
td.cell-fail{background:#fdecea} td.cell-mid{background:#fff4e0} .runs a{margin-right:6px}
.detail{color:#555;font-size:12px}
"""


#: A run that wrote no HTML report (a develop run whose done was refused replays nothing): its
#: log is its record.
_NO_REPORT = '<span class="no-report detail">no report (see its log)</span> '


def _link(target: str | None, base: Path, text: str, kind: str) -> str:
    if not target:
        return ""
    path = Path(target)
    href = os.path.relpath(path, base) if path.is_absolute() else target
    return f'<a class="run-link" data-kind="{kind}" href="{escape(href)}">{escape(text)}</a>'


def _rate_cell(rate: PassRate) -> str:
    if not rate.total:
        return '<td class="na">–</td>'
    kind = "pass" if rate.passed == rate.total else "fail" if rate.passed == 0 else "mid"
    return (
        f'<td class="num cell-{kind}" data-rate="{rate.rate:.4f}">{rate.passed}/{rate.total} '
        f"({rate.rate:.0%})</td>"
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _plots(result: EvalResult) -> str:
    configs = [c.name for c in result.configs]
    cards = [c.name for c in result.cards]
    rates = [result.rate(config=name) for name in configs]
    pass_rate = bar_chart(
        "pass-rate",
        "Pass rate per config (95% Wilson interval over the cases)",
        ["all cards"],
        [
            Series(name, [r.rate], [(r.low, r.high) if r.total else None])
            for name, r in zip(configs, rates, strict=True)
        ],
        unit="%",
    )
    per_card = bar_chart(
        "pass-rate-per-card",
        f"Pass rate per card and config ({result.repeat} repeat(s) each)",
        cards,
        [
            Series(
                name,
                [result.rate(config=name, card=card).rate for card in cards],
                [
                    (r.low, r.high) if r.total else None
                    for r in (result.rate(config=name, card=card) for card in cards)
                ],
            )
            for name in configs
        ],
        unit="%",
    )

    def per(case_value: str) -> list[Series]:
        series = []
        for name in configs:
            values: list[float | None] = []
            for card in cards:
                cases = [c for c in result.cases if c.config == name and c.card == card and c.ended]
                got = [getattr(c, case_value) for c in cases]
                known = [float(v) for v in got if v is not None]
                values.append(_mean(known) if known and len(known) == len(got) else None)
            series.append(Series(name, values))
        return series

    notes = "; ".join(f"{c.name}: {c.price.note}" for c in result.configs)
    cost = bar_chart("cost", f"Cost per case, mean ({notes})", cards, per("cost"), unit="$")
    seconds = bar_chart(
        "time", "Time per case in seconds (the runs' own), mean", cards, per("seconds"), unit="s"
    )
    lines = []
    for name in configs:
        rounds: dict[int, list[int]] = {}
        for case in result.cases:
            if case.config != name:
                continue
            for run in case.runs:
                if run.role != result.develop:
                    continue
                for n, tokens in enumerate(run.tokens_per_round, start=1):
                    rounds.setdefault(n, []).append(tokens)
        points = [(float(n), sum(v) / len(v)) for n, v in sorted(rounds.items())]
        lines.append(Series(name, points=points))
    per_round = line_chart(
        "tokens-per-round",
        f"Tokens per round of the {result.develop} runs (input + output, mean)",
        lines,
        "round",
        unit="tokens",
    )
    return f'<div class="plots">{pass_rate}{per_card}{cost}{seconds}{per_round}</div>'


def _summary_table(result: EvalResult) -> str:
    head = "".join(f"<th>{escape(c.name)}</th>" for c in result.configs)
    rows = []
    for card in result.cards:
        cells = "".join(_rate_cell(result.rate(config=c.name, card=card.name))
                        for c in result.configs)  # fmt: skip
        rows.append(f"<tr><td>{escape(card.name)}<div class='detail'>{escape(card.title)}"
                    f"</div></td>{cells}</tr>")  # fmt: skip
    overall = "".join(_rate_cell(result.rate(config=c.name)) for c in result.configs)
    rows.append(f"<tr><th>all cards</th>{overall}</tr>")
    intervals = "".join(
        f"<td class='num'>{r.low:.0%}–{r.high:.0%}</td>" if r.total else "<td>–</td>"
        for r in (result.rate(config=c.name) for c in result.configs)
    )
    rows.append(f"<tr><th>95% interval</th>{intervals}</tr>")
    spend = "".join(
        f"<td class='num'>{_money(sum(x.cost or 0 for x in result.cases if x.config == c.name))}"
        f"<div class='detail'>{escape(c.price.note)}</div></td>"
        for c in result.configs
    )
    rows.append(f"<tr><th>spent</th>{spend}</tr>")
    return f'<table class="summary"><tr><th>card</th>{head}</tr>{"".join(rows)}</table>'


def _money(value: float | None) -> str:
    if value is None:
        return "no price"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _verdicts(case: CaseResult, base: Path) -> str:
    cells = []
    for v in case.graders:
        mark, kind = (("✓", "pass") if v.passed else ("–", "na") if v.passed is None
                      else ("✗", "fail"))  # fmt: skip
        report = _link(v.report, base, "report", f"{v.grader}-report")
        cells.append(
            f'<div><span class="{kind}" data-grader="{escape(v.grader)}" title="'
            f'{escape(v.detail)}">{mark} {escape(v.grader)}</span> <span class="detail">'
            f"{escape(v.detail[:160])}</span> {report}</div>"
        )
    return "".join(cells) or f'<span class="na">{escape(case.note or case.status)}</span>'


def _cases_table(result: EvalResult, base: Path) -> str:
    rows = []
    for case in result.cases:
        status = "pass" if case.status == "passed" else "fail" if case.status == "failed" else "na"
        runs = []
        for run in case.runs:
            runs.append(
                f'<div class="run" data-run="{escape(run.run_id)}">{escape(run.role)}'
                f"{f' (round {run.round})' if run.round > 1 else ''}: {escape(run.state)} "
                f"{_link(run.report, base, 'report', 'report') or _NO_REPORT}"
                f"{_link(run.log_path, base, 'log', 'log')}"
                f'<span class="detail">{escape(run.run_id[:12])}</span></div>'
            )
        rows.append(
            f'<tr class="case" data-case="{escape(case.key)}" data-status="{case.status}">'
            f"<td>{escape(case.config)}</td><td>{escape(case.card)}</td>"
            f'<td class="num">{case.repeat}</td><td class="{status}">{escape(case.status)}</td>'
            f"<td>{_verdicts(case, base)}</td>"
            f'<td class="num">{case.rounds}</td><td class="num">{case.tokens:,}</td>'
            f'<td class="num">{case.cached_input_tokens:,}</td>'
            f'<td class="num">{_money(case.cost)}</td><td class="num">{case.seconds:.1f}</td>'
            f'<td class="runs">{"".join(runs)}</td></tr>'
        )
    head = ("config", "card", "#", "status", "graders", "rounds", "tokens", "cached", "cost",
            "seconds", "runs")  # fmt: skip
    header = "".join(f"<th>{h}</th>" for h in head)
    return f'<table class="cases"><tr>{header}</tr>{"".join(rows)}</table>'


def render_report(result: EvalResult, where: Path) -> str:
    """The report as HTML text; links are relative to the folder ``where``."""
    configs = ", ".join(
        f'<span style="color:{PALETTE[n % len(PALETTE)]}">■</span> {escape(c.name)} '
        f"({escape(c.model)})"
        for n, c in enumerate(result.configs)
    )
    graded = [c for c in result.cases if c.status in ("passed", "failed")]
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Eval {escape(result.suite)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Eval: {escape(result.suite)}</h1>"
        f"<p class='meta'>{len(result.cards)} card(s) × {len(result.configs)} config(s) × "
        f"{result.repeat} repeat(s) = {len(result.cases)} cases ({len(graded)} graded) · "
        f"pipeline {escape(result.develop)}"
        f"{' → ' + escape(result.then) if result.then else ''} · graders "
        f"{escape(', '.join(result.graders))} · status <b>{escape(result.status)}</b> · "
        f"started {escape(result.started_at)}"
        f"{' · ended ' + escape(result.ended_at) if result.ended_at else ''} · spent "
        f"{_money(result.spend)}</p><p class='meta'>configs: {configs}</p>"
        f"<h2>Pass rate</h2>{_summary_table(result)}"
        f"<h2>Plots</h2>{_plots(result)}"
        f"<h2>Cases</h2>{_cases_table(result, where)}"
        "</body></html>\n"
    )


def write_report(result: EvalResult, path: Path) -> Path:
    """Write the report to ``path`` (HTML)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(result, path.parent.resolve()), encoding="utf-8")
    return path
