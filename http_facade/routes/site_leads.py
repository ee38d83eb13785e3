"""Requesting the discovery call over JSON: the agents' twin of the page's form (docs/public-api.md).

``POST /api/discovery-call.json`` takes the fields ``GET /api/discovery-call.json`` describes
(``booking.form.fields``), counts against the ``forms`` limit like checkout and subscribe, and honours
``Idempotency-Key``. The answer names the request, never the e-mail address it was given.
``GET /admin/platform/leads`` lists the requests for platform administrators (the page ``/app/leads``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from agent_server.foundation.timeutil import iso
from agent_server.policies.ratelimit import Usage
from agent_server.site.leads import API_PATH, CallRequest, DiscoveryCalls, lead_view
from agent_server.site.tables import LeadRecord
from http_facade.errors import JSON_UTF8
from http_facade.idempotency import IdempotentRoute
from http_facade.routes.admin_common import PlatformDep
from http_facade.routes.site_common import per_ip_limit

router = APIRouter(tags=["site"], route_class=IdempotentRoute)
FormsLimit = Annotated[Usage, Depends(per_ip_limit("forms"))]


def discovery_calls(request: Request) -> DiscoveryCalls:
    return request.app.state.discovery_calls


def received(row: LeadRecord) -> dict[str, Any]:
    """What the visitor (or agent) is told: the reference and what happens next."""
    return {
        "id": row.id,
        "object": "discovery_call_request",
        "status": row.status,
        "topic": row.topic,
        "language": row.language,
        "created_at": iso(row.created_at),
        "next": "A confirmation was mailed; the team answers with times within one working day.",
    }


@router.post(API_PATH, status_code=201, summary="Request the free discovery call", response_model=None)
async def request_call(
    body: CallRequest,
    usage: FormsLimit,
    calls: Annotated[DiscoveryCalls, Depends(discovery_calls)],
) -> JSONResponse:
    row = await calls.request(body, source="api")
    return JSONResponse(received(row), status_code=201, headers=usage.headers(), media_type=JSON_UTF8)


@router.get(
    "/admin/platform/leads",
    summary="Requests for the discovery call, newest first (platform:admin)",
    tags=["admin: platform"],
)
async def list_leads(
    actor: PlatformDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> dict[str, Any]:
    rows = await discovery_calls(request).recent(limit)
    return {"object": "list", "data": [lead_view(row) for row in rows]}
