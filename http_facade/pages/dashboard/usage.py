"""Usage: the month so far against the plan, then a period's requests, tokens, errors and spend by
day, by model and by key, as charts with the numbers as tables, from the report of
``GET /admin/usage`` (``usage_report``); with no request in the period, the first-request snippets.

Days without requests are collapsed: the charts leave them out (a marker stands for each run) and
the table gives each run one line.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from agent_server.foundation.timeutil import utc
from agent_server.gateway.usage_range import usage_period
from agent_server.gateway.usage_report import usage_report
from http_facade.deps import IsoDay
from http_facade.pages.dashboard.charts import BarList, ColumnChart, bar_list, column_chart, count
from http_facade.pages.dashboard.route import SessionDep, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.pages.dashboard.snippets import first_request
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.pages.money import minor_text, spend_text

router = dashboard_router()
DEFAULT_DAYS = 30
MAX_DAYS = 366
# (field of the report's rows, chart title word, unit after a value)
METRICS = (
    ("requests", "Requests", "requests"),
    ("total_tokens", "Tokens", "tokens"),
    ("errors", "Errors", "errors"),
)
# What templates that show usage need besides the report.
USAGE_HELPERS = {"count": count, "spend_text": spend_text, "minor_text": minor_text}
NO_MODEL = "(model list)"  # the rows of GET /v1/models name no model


def _metrics(report: dict[str, Any]) -> list[tuple[str, str, str, Callable[[float], str]]]:
    """The charted metrics: errors when there were any, spend when something cost money."""
    totals, currency = report["totals"], report["currency"]
    shown = [
        (field, title, unit, count) for field, title, unit in METRICS if field != "errors" or totals["errors"]
    ]
    if totals["cost_micros"]:
        shown.append(("cost_micros", "Spend", "", lambda micros: spend_text(int(micros), currency)))
    return shown


def _days(report: dict[str, Any], first: date, last: date) -> list[dict[str, Any]]:
    """The days with requests, and a line for each run of days without (``gap``: its length)."""
    lines: list[dict[str, Any]] = []
    expected = first
    for row in report["by_day"]:
        day = date.fromisoformat(row["day"])
        if day > expected:
            lines.append({"gap": (day - expected).days, "from": expected, "to": day - timedelta(days=1)})
        lines.append(row)
        expected = day + timedelta(days=1)
    if expected <= last:
        lines.append({"gap": (last - expected).days + 1, "from": expected, "to": last})
    return lines


def _days_text(number: int) -> str:
    return f"{number} day" if number == 1 else f"{number:,} days"


def _day_charts(report: dict[str, Any], lines: list[dict[str, Any]]) -> list[ColumnChart]:
    days = [line for line in lines if "gap" not in line]
    gaps_before, gap_titles, seen = [], {}, 0
    for line in lines:
        if "gap" in line:
            gaps_before.append(seen)
            gap_titles[seen] = f"{_days_text(line['gap'])} without requests, {line['from']} to {line['to']}"
        else:
            seen += 1
    return [
        column_chart(
            f"day-{field.removesuffix('_micros')}",
            f"{title} per day",
            [(row["day"], row[field]) for row in days],
            unit=unit,
            fmt=fmt,
            gaps_before=gaps_before,
            gap_text=lambda index: gap_titles.get(index, ""),
        )
        for field, title, unit, fmt in _metrics(report)
    ]


def _split_charts(report: dict[str, Any], split: str) -> list[BarList]:
    if split == "model":
        points = [(row["model"] or NO_MODEL, "", row) for row in report["by_model"]]
    else:
        points = [
            (row["name"] or row["key_id"], row["redacted"] or row["key_id"], row) for row in report["by_key"]
        ]
    return [
        bar_list(
            f"{split}-{field.removesuffix('_micros')}",
            f"{title} per {split}",
            [(label, detail, row[field]) for label, detail, row in points],
            unit=unit,
            fmt=fmt,
        )
        for field, title, unit, fmt in _metrics(report)
    ]


@router.get(
    f"{APP_PATH}/usage",
    summary="Dashboard: the month against the plan; usage by day, model and key (requests, tokens, spend)",
    responses=responses(),
)
async def usage_page(
    request: Request,
    session: SessionDep,
    start: Annotated[IsoDay | None, Query(description="First UTC day (YYYY-MM-DD).")] = None,
    end: Annotated[IsoDay | None, Query(description="Last UTC day (YYYY-MM-DD).")] = None,
) -> HTMLResponse:
    gateway = request.app.state.gateway
    today = utc(gateway.clock.now()).date()
    period = usage_period(start, end, today=today, default_days=DEFAULT_DAYS, max_days=MAX_DAYS)
    first, last = period.start or today, period.end or today
    report = await usage_report(gateway, session.tenant_id, period)
    lines = _days(report, first, last)
    context: dict[str, Any] = {
        **USAGE_HELPERS,
        "start": first,
        "end": last,
        "report": report,
        "month": report["month_to_date"],
        "priced": bool(report["totals"]["cost_micros"]),
        "day_lines": lines,
        "day_charts": _day_charts(report, lines),
        "model_charts": _split_charts(report, "model"),
        "key_charts": _split_charts(report, "key"),
        "no_model": NO_MODEL,
        "days_text": _days_text,
    }
    if not report["totals"]["requests"]:
        _, plan = await tenant_of(request, session)
        context["first_request"] = await first_request(request, plan)
    return page(request, "usage.html", context, session=session)
