"""The request log as JSON: ``GET /admin/logs`` (filters, cursor paging) and ``GET /admin/logs/{request_id}``.

Tenant admin JWT; the token's tenant only (another tenant's request id is 404, like a missing one).
The rows still waiting in the usage writer are written first, so a request just answered is listed.
What the fields mean: docs/request-log.md; the service is ``agent_server/gateway/request_log.py``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from agent_server.gateway.request_log import REQUEST_ID_PATTERN, LogFilters, find_request, list_requests
from http_facade.gateway_deps import AdminDep, GatewayDep

router = APIRouter(tags=["admin: request log"])
RequestId = Annotated[str, Path(pattern=REQUEST_ID_PATTERN, description="The request's X-Request-Id.")]


@router.get("/admin/logs", summary="The tenant's /v1 and /v2 requests, newest first, with filters")
async def list_logs(
    admin: AdminDep, gateway: GatewayDep, filters: Annotated[LogFilters, Query()]
) -> dict[str, Any]:
    await gateway.usage.flush()
    return await list_requests(gateway.db, admin.tenant_id, filters)


@router.get("/admin/logs/{request_id}", summary="One request of the log, with its bodies when stored")
async def show_log(request_id: RequestId, admin: AdminDep, gateway: GatewayDep) -> dict[str, Any]:
    await gateway.usage.flush()
    return await find_request(gateway.db, admin.tenant_id, request_id, gateway.clock.now())
