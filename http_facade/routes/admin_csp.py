"""CSP reports: an unauthenticated collector for browsers and a platform-admin aggregate.

Browsers send violation reports on their own, without the page's credentials, so the collector
cannot require a JWT (spec 4.4 lists it under JWT; a browser cannot comply). It accepts anonymous
reports instead, bounded: body size (``csp_report_max_bytes``, 413), reports per IP per hour
(``csp_reports_per_ip_per_hour``, 429) and at most 20 reports per request. The reports concern the
platform's own pages, not one tenant, so the aggregate is for ``platform:admin``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, status

from agent_server.admin.csp import parse_reports
from agent_server.foundation.errors import PayloadTooLarge
from agent_server.policies.ratelimit import Policy
from http_facade.deps import client_ip
from http_facade.routes.admin_common import AdminDep, PlatformDep

router = APIRouter(tags=["admin: csp"])
WINDOW = 3600


@router.post(
    "/admin/csp-report/",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Collect browser CSP violation reports (no auth; limited per IP)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/csp-report": {"schema": {"type": "object"}},
                "application/reports+json": {"schema": {"type": "array", "items": {"type": "object"}}},
            },
        }
    },
)
async def collect(request: Request, admin: AdminDep) -> dict[str, Any]:
    services = request.app.state.services
    limit = services.settings.csp_report_max_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"A CSP report may have at most {limit} bytes.")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise PayloadTooLarge(f"A CSP report may have at most {limit} bytes.")
    ip = client_ip(request)
    per_ip = Policy("csp-reports", services.settings.csp_reports_per_ip_per_hour, WINDOW, fail_open=True)
    await request.app.state.site.limiter.enforce(per_ip, ip)  # the service's one limiter (GCRA)
    violations = parse_reports(request.headers.get("content-type", ""), raw)
    return {"accepted": await admin.csp.store(violations, ip)}


@router.get("/admin/csp-report/aggregate", summary="CSP reports grouped by directive and blocked URI")
async def aggregate(
    actor: PlatformDep, admin: AdminDep, limit: int = Query(default=100, ge=1, le=500)
) -> dict[str, Any]:
    return {"object": "list", "data": await admin.csp.aggregate(limit)}
