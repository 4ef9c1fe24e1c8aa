"""Inline SVG plots for the HTML report: a line chart over time and a bar chart, no JavaScript, no fonts.

Every plot is one `<svg class="plot" data-marks="N">` element, N being the number of data marks
drawn (points or bars), so a test (or a reader) can tell a drawn plot from an empty one. Text is
escaped; colours come from one palette and a legend names each series.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence

PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e")
WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 70, 160, 14, 46
LEGEND_CHARS = 18  # a longer series name shows its end (log dir paths differ there), whole in its tooltip


def human_bytes(value: float) -> str:
    """1,234,567 -> '1.2 MB' (decimal units, as disk sizes are given)."""
    units = ("B", "kB", "MB", "GB", "TB")
    power = 0
    while abs(value) >= 1000 and power < len(units) - 1:
        value /= 1000
        power += 1
    return f"{value:.0f} B" if power == 0 else f"{value:.1f} {units[power]}"


def _ticks(top: float) -> list[float]:
    top = top or 1.0
    return [top * i / 4 for i in range(5)]


def _frame(y_top: float, y_format: str, marks: int, body: list[str], legend: Sequence[str], title: str) -> str:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg class="plot" data-marks="{marks}" role="img" aria-label="{html.escape(title)}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{html.escape(title)}</title>",
    ]
    for tick in _ticks(y_top):
        y = TOP + plot_h - (tick / (y_top or 1.0)) * plot_h
        label = human_bytes(tick) if y_format == "bytes" else f"{tick:.3g}"
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{label}</text>')
    parts += body
    for i, name in enumerate(legend):
        y = TOP + 14 + i * 18
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{WIDTH - RIGHT + 12}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        shown = name if len(name) <= LEGEND_CHARS else "…" + name[-(LEGEND_CHARS - 1) :]
        parts.append(
            f'<text x="{WIDTH - RIGHT + 30}" y="{y}" font-size="12">{html.escape(shown)}'
            f"<title>{html.escape(name)}</title></text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def line_chart(series: dict[str, list[tuple[datetime.datetime, float]]], *, y_format: str, title: str) -> str:
    """One line (with a dot per point) per series over a shared time axis."""
    times = sorted({t for points in series.values() for t, _ in points})
    y_top = max((v for points in series.values() for _, v in points), default=0.0) * 1.1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = (times[-1] - times[0]).total_seconds() if len(times) > 1 else 0.0

    def x(t: datetime.datetime) -> float:
        return LEFT + (plot_w * (t - times[0]).total_seconds() / span if span else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h - (v / (y_top or 1.0)) * plot_h

    body, marks = [], 0
    for t in times:
        body.append(
            f'<text x="{x(t):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">'
            f"{t:%Y-%m-%d %H:%M}</text>"
        )
    for i, (name, points) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in sorted(points))
        body.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>')
        for t, v in points:
            body.append(
                f'<circle class="mark" cx="{x(t):.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour}">'
                f"<title>{html.escape(name)} {t:%Y-%m-%d %H:%M}: {v:,.0f}</title></circle>"
            )
            marks += 1
    return _frame(y_top, y_format, marks, body, list(series), title)


MIN_MARK_PX = 1.0


def bar_chart(bars: Sequence[tuple[str, dict[str, float]]], *, y_format: str, title: str) -> str:
    """Stacked bars: one bar per label, one coloured part per series (legend: the series, in first-seen order)."""
    names: list[str] = []
    for _, parts in bars:
        names += [n for n in parts if n not in names]
    y_top = max((sum(parts.values()) for _, parts in bars), default=0.0) * 1.1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(bars), 1)
    body, marks = [], 0
    for index, (label, parts) in enumerate(bars):
        x = LEFT + index * slot + slot * 0.15
        base = 0.0
        for name in names:
            value = parts.get(name, 0.0)
            if value <= 0:
                continue
            # A nonzero part stays visible: a 4 KiB directory beside a 10 MiB index would round to 0 px.
            height = max(value / (y_top or 1.0) * plot_h, MIN_MARK_PX)
            y = TOP + plot_h - (base / (y_top or 1.0)) * plot_h - height
            colour = PALETTE[names.index(name) % len(PALETTE)]
            body.append(
                f'<rect class="mark" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{height:.1f}" '
                f'fill="{colour}"><title>{html.escape(label)} {html.escape(name)}: {value:,.4g}</title></rect>'
            )
            base += value
            marks += 1
        body.append(
            f'<text x="{x + slot * 0.35:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">'
            f"{html.escape(label)}</text>"
        )
    return _frame(y_top, y_format, marks, body, names, title)
