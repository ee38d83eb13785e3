"""Bar charts as server-rendered SVG: the geometry here, the drawing in ``partials/chart.html``.

Each chart carries a ``<title>`` and a one-sentence description for assistive technology, and every
page that draws one also shows the numbers as a table. No script and no library: a chart is a few
rectangles in a ``viewBox`` that CSS scales to the screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 24, 8, 28, 30  # room for the highest value above and the categories below
MAX_LABELS = 6  # categories labelled under the bars (legible on a phone); the table names them all


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: str


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    id: str
    title: str
    description: str
    bars: list[Bar]
    ticks: list[Tick]
    top_label: str
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    baseline: int = HEIGHT - BOTTOM


def bar_chart(
    chart_id: str,
    title: str,
    points: Sequence[tuple[str, float]],
    fmt: Callable[[float], str] = lambda v: f"{v:,.0f}",
    short: Callable[[str], str] = lambda label: label,
) -> Chart:
    """Bars for ``(category, value)`` points, scaled to the largest value (an empty chart is flat);
    ``short`` shortens the labels written under the bars (each bar's own title keeps the whole)."""
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    highest = max((value for _, value in points), default=0.0)
    slot = plot_width / max(len(points), 1)
    bars = []
    for index, (label, value) in enumerate(points):
        height = plot_height * value / highest if highest > 0 else 0.0
        x = LEFT + index * slot + slot * 0.1
        bars.append(Bar(round(x, 2), round(TOP + plot_height - height, 2), round(slot * 0.8, 2),
                        round(height, 2), label, fmt(value)))  # fmt: skip
    step = max(1, -(-len(points) // MAX_LABELS))
    ticks = [Tick(round(bar.x + bar.width / 2, 2), short(bar.label)) for bar in bars[::step]]
    return Chart(chart_id, title, _describe(title, points, fmt), bars, ticks, fmt(highest))


def _describe(title: str, points: Sequence[tuple[str, float]], fmt: Callable[[float], str]) -> str:
    if not points:
        return f"{title}: no data in this period."
    top_label, top_value = max(points, key=lambda point: point[1])
    total = sum(value for _, value in points)
    return (
        f"{title}: {len(points)} bars from {points[0][0]} to {points[-1][0]}; "
        f"the highest is {fmt(top_value)} ({top_label}), the total {fmt(total)}."
    )
