"""``GET /admin/audit``: the tenant's audit entries, recorded by the middleware of
http_facade/audit_trail.py."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from agent_server.webhooks.repository import iso
from http_facade.routes.admin_common import ActorDep, AdminDep, require_feature

router = APIRouter(tags=["admin: audit"])


@router.get("/admin/audit", summary="The tenant's audit entries, newest first")
async def list_audit(
    actor: ActorDep,
    request: Request,
    admin: AdminDep,
    limit: int = Query(default=100, ge=1, le=500),
    flagged: bool | None = None,
    action: str | None = Query(default=None, max_length=100),
) -> dict[str, Any]:
    await require_feature(request, actor, "audit_log")
    entries = await admin.audit.list(actor.tenant_id, limit=limit, flagged=flagged, action=action)
    return {
        "object": "list",
        "data": [
            {
                "id": e.id,
                "at": iso(e.at),
                "actor": e.actor,
                "action": e.action,
                "target": e.target,
                "ip": e.ip,
                "outcome": e.outcome,
                "flagged": e.flagged,
                "flag_reason": e.flag_reason,
                "details": e.details,
            }
            for e in entries
        ],
    }
