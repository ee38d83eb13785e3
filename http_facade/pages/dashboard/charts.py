"""Charts as server-rendered SVG: the geometry here, the drawing in ``partials/chart.html`` (columns
over time) and ``partials/bar_list.html`` (bars per model or key). No script and no library.

Text is never scaled or cut: a column chart has no ``viewBox``, so its marks are placed in percent of
the width and its labels keep their size in CSS pixels (legible at 375 px as at 1280 px), with fewer
labels where the columns are narrow; a bar list names its categories in HTML, which wraps. Every
column is focusable and named ("2026-05-18: 4 requests"); hovering or focusing it shows that text
above the plot, and the page shows the same numbers as a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

HEIGHT, TOP, BASELINE = 200, 44, 172  # px: the readout and the highest value above the columns
MIN_SLOTS = 8  # a single column is not drawn across the whole width
GAP_WEIGHT = 0.6  # a run of days without requests takes less room than a day
TICK_SPACING = 17.0  # percent between labels: "18 May" at 12 px fits 320 px six times
EDGE = 8.0  # percent: a label this close to an edge is aligned to it, not centred

Fmt = Callable[[float], str]


def count(value: float) -> str:
    return f"{value:,.0f}"


@dataclass(frozen=True, slots=True)
class Column:
    x: float  # left edge, percent of the width
    width: float  # percent
    y: float  # px from the top
    height: float  # px
    label: str  # the category in full (the day)
    value: str
    name: str  # what the column says: "2026-05-18: 4 requests"


@dataclass(frozen=True, slots=True)
class Text:
    x: float  # percent
    text: str
    anchor: str = "middle"
    title: str = ""


@dataclass(frozen=True, slots=True)
class ColumnChart:
    id: str
    title: str
    description: str
    columns: list[Column]
    gaps: list[Text]
    ticks: list[Text]
    top_label: str
    height: int = HEIGHT
    top: int = TOP
    baseline: int = BASELINE


def _name(label: str, value: str, unit: str) -> str:
    """What a mark says: ``2026-05-18: 4 requests``."""
    return f"{label}: {value} {unit}" if unit else f"{label}: {value}"


def _anchored(x: float, left: float, right: float) -> tuple[float, str]:
    if x < EDGE:
        return left, "start"
    if x > 100 - EDGE:
        return right, "end"
    return x, "middle"


def _short_day(label: str) -> str:
    try:
        day = date.fromisoformat(label)
        return f"{day.day} {day:%b}"
    except ValueError:
        return label


def column_chart(
    chart_id: str,
    title: str,
    points: Sequence[tuple[str, float]],
    *,
    unit: str = "",
    fmt: Fmt = count,
    gaps_before: Sequence[int] = (),
    gap_text: Callable[[int], str] = lambda index: "",
) -> ColumnChart:
    """Columns for ``(day, value)`` points, scaled to the largest value; ``gaps_before`` are the
    indexes of points preceded by days left out (drawn as a marker titled ``gap_text(index)``)."""
    plot = BASELINE - TOP
    highest = max((value for _, value in points), default=0.0)
    weights = len(points) + GAP_WEIGHT * len(gaps_before)
    slot = 100 / max(weights, MIN_SLOTS)
    columns, gaps, position = [], [], 0.0
    for index, (label, value) in enumerate(points):
        if index in gaps_before:
            gaps.append(_gap(position, slot, gap_text(index)))
            position += slot * GAP_WEIGHT
        height = plot * value / highest if highest > 0 else 0.0
        shown = fmt(value)
        columns.append(Column(round(position + slot * 0.15, 3), round(slot * 0.7, 3),
                              round(BASELINE - height, 2), round(height, 2), label, shown, _name(label, shown, unit)))  # fmt: skip
        position += slot
    if len(points) in gaps_before:  # days left out after the last column
        gaps.append(_gap(position, slot, gap_text(len(points))))
    return ColumnChart(
        chart_id,
        title,
        _describe(title, points, fmt, bool(gaps)),
        columns,
        gaps,
        _ticks(columns),
        fmt(highest),
    )


def _gap(position: float, slot: float, title: str) -> Text:
    """The marker of days left out, in the room it takes from ``position`` on."""
    width = slot * GAP_WEIGHT
    x, anchor = _anchored(position + width / 2, position, position + width)
    return Text(round(x, 3), "⋯", anchor, title)


def _ticks(columns: list[Column]) -> list[Text]:
    """Labels under some columns, at least ``TICK_SPACING`` apart, the last column's always."""
    ticks: list[Text] = []
    last = -100.0
    for index, column in enumerate(columns):
        centre = column.x + column.width / 2
        final = index == len(columns) - 1
        if centre - last < TICK_SPACING:
            if not final or not ticks:
                continue
            ticks.pop()  # the last column's label wins over its close neighbour's
        x, anchor = _anchored(centre, column.x, column.x + column.width)
        ticks.append(Text(round(x, 3), _short_day(column.label), anchor))
        last = centre
    return ticks


def _describe(title: str, points: Sequence[tuple[str, float]], fmt: Fmt, gaps: bool) -> str:
    """One sentence for assistive technology: how many columns, the span, the highest, the total."""
    if not points:
        return f"{title}: no data in this period."
    top_label, top_value = max(points, key=lambda point: point[1])
    total = sum(value for _, value in points)
    left_out = " Days without requests are left out." if gaps else ""
    return (
        f"{title}: {len(points)} bars from {points[0][0]} to {points[-1][0]}; "
        f"the highest is {fmt(top_value)} ({top_label}), the total {fmt(total)}.{left_out}"
    )


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    detail: str  # a second line under the label (a key's redacted form), or ""
    value: str
    length: float  # percent of the longest
    name: str


@dataclass(frozen=True, slots=True)
class BarList:
    id: str
    title: str
    description: str
    bars: list[Bar]


def bar_list(
    chart_id: str,
    title: str,
    points: Sequence[tuple[str, str, float]],
    *,
    unit: str = "",
    fmt: Fmt = count,
) -> BarList:
    """Horizontal bars for ``(label, detail, value)`` points, in the order given."""
    highest = max((value for _, _, value in points), default=0.0)
    bars = [
        Bar(
            label,
            detail,
            fmt(value),
            round(100 * value / highest, 2) if highest > 0 else 0.0,
            _name(label, fmt(value), unit),
        )
        for label, detail, value in points
    ]
    if not points:
        return BarList(chart_id, title, f"{title}: no data in this period.", bars)
    top_label, _, top_value = max(points, key=lambda point: point[2])
    total = sum(value for _, _, value in points)
    described = (
        f"{title}: {len(points)} bars; the highest is {fmt(top_value)} ({top_label}), the total {fmt(total)}."
    )
    return BarList(chart_id, title, described, bars)
