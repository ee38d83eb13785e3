"""The request log: ``/app/logs`` (newest first, filters as a GET form, an "Older" link per page)
and ``/app/logs/{request_id}`` (every field, the bodies when the key keeps them). Both call what
``GET /admin/logs`` and ``GET /admin/logs/{request_id}`` call (``agent_server/gateway/request_log.py``).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from agent_server.gateway.repository import list_keys
from agent_server.gateway.request_log import (
    ENDPOINTS,
    PLAYGROUND_KEY,
    REQUEST_ID_PATTERN,
    STATUS_CLASSES,
    LogFilters,
    find_request,
    list_requests,
)
from http_facade.errors import validation_error
from http_facade.pages.dashboard.route import SessionDep, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.pages.money import spend_text

router = dashboard_router()
LOGS_PAGE = f"{APP_PATH}/logs"
LOCAL_MINUTE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d").fullmatch  # what a datetime-local field sends


def pretty(body: str | None) -> str | None:
    """A stored body as people read it: JSON indented, anything else (a stream's text) as it is."""
    if body is None:
        return None
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body


def _cost(entry: dict[str, Any]) -> str:
    micros, currency = entry["cost_micros"], entry["currency"]
    return spend_text(micros, currency) if micros and currency else "—"


def form_filters(values: dict[str, str]) -> LogFilters:
    """The GET form's fields as the JSON route's filters: an empty field is no filter, and the
    browser's ``datetime-local`` value (``2026-05-18T10:00``) is that minute in UTC."""
    given = {name: value for name, value in values.items() if value != ""}
    for name in ("since", "until"):
        if LOCAL_MINUTE(given.get(name, "")):
            given[name] += ":00Z"
    try:
        return LogFilters.model_validate(given)
    except ValidationError as exc:
        errors = [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
        raise validation_error(errors) from None


@router.get(
    LOGS_PAGE, summary="Dashboard: the request log (newest first, filters, paging)", responses=responses()
)
async def logs_page(
    request: Request,
    session: SessionDep,
    key: Annotated[str, Query(max_length=40)] = "",
    model: Annotated[str, Query(max_length=200)] = "",
    status: Annotated[str, Query(max_length=3, description="2xx, 4xx or 5xx")] = "",
    endpoint: Annotated[str, Query(max_length=40)] = "",
    since: Annotated[str, Query(max_length=40, description="UTC, 2026-05-18T10:00 or RFC 3339")] = "",
    until: Annotated[str, Query(max_length=40, description="UTC, 2026-05-18T10:00 or RFC 3339")] = "",
    limit: Annotated[str, Query(max_length=3)] = "",
    cursor: Annotated[str, Query(max_length=100)] = "",
) -> HTMLResponse:
    filters = form_filters(
        {"key": key, "model": model, "status": status, "endpoint": endpoint, "since": since,
         "until": until, "limit": limit, "cursor": cursor}
    )  # fmt: skip
    gateway = request.app.state.gateway
    await gateway.usage.flush()  # as the JSON route: a request just answered is listed
    listed = await list_requests(gateway.db, session.tenant_id, filters)
    keys = await list_keys(gateway.db, session.tenant_id)
    query = filters.query()
    older = None
    if listed["next_cursor"] is not None:
        older = f"{LOGS_PAGE}?{urlencode({**query, 'cursor': listed['next_cursor']})}"
    context = {
        "filters": filters,
        "entries": listed["data"],
        "keys": [(key.id, key.name) for key in keys] + [(PLAYGROUND_KEY, "Playground")],
        "endpoints": ENDPOINTS,
        "status_classes": tuple(STATUS_CLASSES),
        "older": older,
        "newest": f"{LOGS_PAGE}?{urlencode(query)}" if filters.cursor else None,
        "since_value": filters.since.strftime("%Y-%m-%dT%H:%M") if filters.since else "",
        "until_value": filters.until.strftime("%Y-%m-%dT%H:%M") if filters.until else "",
        "cost": _cost,
    }
    return page(request, "logs.html", context, session=session)


@router.get(
    f"{LOGS_PAGE}/{{request_id}}",
    summary="Dashboard: one request of the log, with its bodies when stored",
    responses=responses(404),
)
async def log_page(
    request: Request,
    session: SessionDep,
    request_id: Annotated[str, Path(pattern=REQUEST_ID_PATTERN)],
) -> HTMLResponse:
    gateway = request.app.state.gateway
    await gateway.usage.flush()
    entry = await find_request(gateway.db, session.tenant_id, request_id, gateway.clock.now())
    body = entry["body"]
    context = {
        "entry": entry,
        "cost": _cost(entry),
        "request_body": pretty(body["request"]) if body else None,
        "response_body": pretty(body["response"]) if body else None,
        "key_requests": f"{LOGS_PAGE}?{urlencode({'key': entry['key']['id']})}",
    }
    return page(request, "logs_detail.html", context, session=session)
