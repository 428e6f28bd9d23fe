"""Small inline SVG plots for the eval report: grouped bars (with an interval per bar) and
lines. Plain SVG text, no script and nothing fetched: the report stays one self-contained file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

__all__ = ["PALETTE", "Series", "bar_chart", "line_chart"]

#: One colour per config, in order (Okabe-Ito: tells apart for colour-blind readers too).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")

_WIDTH, _HEIGHT = 720, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 40, 64


@dataclass
class Series:
    """One config's values: one per group (None: no value), or (x, y) points for a line."""

    name: str
    values: list[float | None] = field(default_factory=list)
    #: (low, high) per value: drawn as a whisker.
    intervals: list[tuple[float, float] | None] = field(default_factory=list)
    points: list[tuple[float, float]] = field(default_factory=list)


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def _number(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value * 100:.0f}%"
    if unit == "$":
        return f"${value:.4f}" if 0 < value < 0.1 else f"${value:,.2f}"
    if abs(value) >= 10_000:
        return f"{value / 1000:,.0f}k"
    return f"{value:,.1f}".removesuffix(".0")


def _frame(kind: str, title: str, top: float, unit: str) -> list[str]:
    plot_h = _HEIGHT - _TOP - _BOTTOM
    parts = [
        f'<svg class="plot" data-plot="{escape(kind)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_LEFT}" y="18" class="plot-title">{escape(title)}</text>',
    ]
    for i in range(5):
        value = top * i / 4
        y = _TOP + plot_h - plot_h * i / 4
        parts.append(
            f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            f'class="grid"/><text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'class="tick">{escape(_number(value, unit))}</text>'
        )
    return parts


def _legend(series: list[Series]) -> list[str]:
    parts = []
    x = _LEFT
    for n, s in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        parts.append(
            f'<rect x="{x}" y="{_HEIGHT - 16}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x + 14}" y="{_HEIGHT - 7}" class="legend">{escape(s.name)}</text>'
        )
        x += 24 + 7 * len(s.name)
    return parts


def bar_chart(
    kind: str, title: str, groups: list[str], series: list[Series], unit: str = ""
) -> str:
    """Grouped bars: one group per label in ``groups``, one bar per series in each; a value's
    interval (if given) is a whisker. ``unit``: ``%`` (values 0..1), ``$`` or a word."""
    values = [v for s in series for v in s.values if v is not None]
    highs = [i[1] for s in series for i in s.intervals if i is not None]
    top = 1.0 if unit == "%" else _nice_max(max([*values, *highs], default=0.0))
    parts = _frame(kind, title, top, unit)
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM
    slot = plot_w / max(1, len(groups))
    bar = min(48.0, slot * 0.8 / max(1, len(series)))
    for g, group in enumerate(groups):
        start = _LEFT + g * slot + (slot - bar * len(series)) / 2
        fits = max(6, int(slot / 6.2))  # characters of 11 px text in the group's width
        label = group if len(group) <= fits else group[: fits - 1] + "…"
        parts.append(
            f'<text x="{_LEFT + g * slot + slot / 2:.1f}" y="{_TOP + plot_h + 16}" '
            f'text-anchor="middle" class="group"><title>{escape(group)}</title>'
            f"{escape(label)}</text>"
        )
        for n, s in enumerate(series):
            value = s.values[g] if g < len(s.values) else None
            x = start + n * bar
            colour = PALETTE[n % len(PALETTE)]
            if value is None:
                parts.append(
                    f'<text x="{x + bar / 2:.1f}" y="{_TOP + plot_h - 4}" text-anchor="middle" '
                    f'class="none">n/a</text>'
                )
                continue
            h = plot_h * min(value, top) / top
            y = _TOP + plot_h - h
            shown = _number(value, unit)
            parts.append(
                f'<rect class="bar" data-series="{escape(s.name)}" data-group="{escape(group)}" '
                f'data-value="{value:.6g}" x="{x + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" '
                f'height="{max(h, 0.5):.1f}" fill="{colour}"><title>{escape(s.name)} · '
                f"{escape(group)}: {escape(shown)}</title></rect>"
                f'<text x="{x + bar / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                f'class="value">{escape(shown)}</text>'
            )
            interval = s.intervals[g] if g < len(s.intervals) else None
            if interval is not None:
                low = _TOP + plot_h - plot_h * interval[0] / top
                high = _TOP + plot_h - plot_h * min(interval[1], top) / top
                cx = x + bar / 2
                parts.append(
                    f'<g class="interval" data-low="{interval[0]:.4f}" '
                    f'data-high="{interval[1]:.4f}"><line x1="{cx:.1f}" x2="{cx:.1f}" '
                    f'y1="{low:.1f}" y2="{high:.1f}"/><line x1="{cx - 5:.1f}" x2="{cx + 5:.1f}" '
                    f'y1="{low:.1f}" y2="{low:.1f}"/><line x1="{cx - 5:.1f}" '
                    f'x2="{cx + 5:.1f}" y1="{high:.1f}" y2="{high:.1f}"/></g>'
                )
    parts += _legend(series)
    parts.append("</svg>")
    return "".join(parts)


def line_chart(kind: str, title: str, series: list[Series], x_label: str, unit: str = "") -> str:
    """One line per series through its ``points`` (x, y)."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    top = _nice_max(max(ys, default=0.0))
    right = max(xs, default=1.0)
    parts = _frame(kind, title, top, unit)
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM
    left = min(xs, default=1.0)
    span = max(1.0, right - left)

    def at(x: float, y: float) -> str:
        return f"{_LEFT + plot_w * (x - left) / span:.1f},{_TOP + plot_h - plot_h * y / top:.1f}"

    step = max(1, round(span / 10))
    tick = left
    while tick <= right:
        px = _LEFT + plot_w * (tick - left) / span
        parts.append(
            f'<text x="{px:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle" '
            f'class="tick">{tick:g}</text>'
        )
        tick += step
    parts.append(
        f'<text x="{_LEFT + plot_w / 2}" y="{_TOP + plot_h + 34}" text-anchor="middle" '
        f'class="axis">{escape(x_label)}</text>'
    )
    for n, s in enumerate(series):
        if not s.points:
            continue
        colour = PALETTE[n % len(PALETTE)]
        path = " ".join(at(x, y) for x, y in s.points)
        parts.append(
            f'<polyline class="line" data-series="{escape(s.name)}" '
            f'data-points="{len(s.points)}" fill="none" stroke="{colour}" stroke-width="2" '
            f'points="{path}"><title>{escape(s.name)}</title></polyline>'
        )
    parts += _legend(series)
    parts.append("</svg>")
    return "".join(parts)
