"""Usage: requests, tokens, errors and cost per day and per model, from the report of
``GET /admin/usage`` (``usage_report.report``), drawn as SVG bar charts with the numbers as tables.

Cost is shown when the report's rows carry it (``cost_micros`` in the deployment's currency).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal
from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from agent_server.billing.money import exponent
from agent_server.errors import ValidationFailed
from agent_server.gateway.usage_report import report
from agent_server.timeutil import utc
from http_facade.deps import IsoDay
from http_facade.pages.dashboard.charts import Chart, bar_chart
from http_facade.pages.dashboard.route import SessionDep, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH

router = dashboard_router()
DEFAULT_DAYS = 30
MAX_DAYS = 366
METRICS = (("requests", "Requests"), ("total_tokens", "Tokens"), ("errors", "Errors"))


def cost_text(micros: float, currency: str) -> str:
    """Millionths of a minor unit as an amount: two more decimals than the currency has (a few
    requests cost fractions of a cent)."""
    places = exponent(currency)
    return f"{Decimal(int(micros)).scaleb(-6 - places):,.{places + 2}f} {currency}"


def _period(start: date | None, end: date | None, today: date) -> tuple[date, date]:
    end = end or today
    start = start or end - timedelta(days=DEFAULT_DAYS - 1)
    if start > end or (end - start).days >= MAX_DAYS:
        raise ValidationFailed(
            f"Choose a start on or before the end, at most {MAX_DAYS} days apart.", param="start"
        )
    return start, end


def _totals(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    """Per ``key`` (day or model): the sum of every metric and of the cost."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        for metric in ("requests", "total_tokens", "errors", "cost_micros"):
            totals[row[key]][metric] += row.get(metric, 0) or 0
    return totals


def _charts(
    prefix: str, title: str, points: dict[str, dict[str, float]], currency: str | None
) -> list[Chart]:
    labels = list(points)
    short = (lambda label: label[5:]) if prefix == "day" else (lambda label: label[:14])
    charts = [
        bar_chart(
            f"{prefix}-{metric}", f"{name} {title}", [(k, points[k][metric]) for k in labels], short=short
        )
        for metric, name in METRICS
    ]
    if currency is not None:
        series = [(k, points[k]["cost_micros"]) for k in labels]
        fmt = lambda v: cost_text(v, currency)  # noqa: E731
        charts.append(bar_chart(f"{prefix}-cost", f"Cost {title}", series, fmt, short))
    return charts


@router.get(
    f"{APP_PATH}/usage",
    summary="Dashboard: usage per day and per model (requests, tokens, errors, cost)",
    responses=responses(),
)
async def usage_page(
    request: Request,
    session: SessionDep,
    start: Annotated[IsoDay | None, Query(description="First UTC day (YYYY-MM-DD).")] = None,
    end: Annotated[IsoDay | None, Query(description="Last UTC day (YYYY-MM-DD).")] = None,
) -> HTMLResponse:
    gateway = request.app.state.gateway
    first, last = _period(start, end, utc(gateway.clock.now()).date())
    await gateway.usage.flush()  # include what the writer still holds, as the JSON route does
    currency = gateway.models.currency
    rows = await report(gateway.db, session.tenant_id, currency, by_day=True, since=first, until=last)
    with_cost = currency if any("cost_micros" in row for row in rows) else None
    by_day = _totals(rows, "day")
    days = (str(first + timedelta(days=n)) for n in range((last - first).days + 1))
    per_day = {day: by_day.get(day, defaultdict(float)) for day in days}  # days without use are 0
    per_model = dict(sorted(_totals(rows, "model").items()))
    context = {
        "start": first,
        "end": last,
        "currency": with_cost,
        "cost_text": cost_text,
        "per_day": per_day,
        "per_model": per_model,
        "day_charts": _charts("day", "per day", per_day, with_cost),
        "model_charts": _charts("model", "per model", per_model, with_cost),
    }
    return page(request, "usage.html", context, session=session)
