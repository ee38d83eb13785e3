"""Connector routes of spec 4.4, generated once per kind from agent_server/admin/connectors.py.

``/admin/<office_suite>/...`` has per-user *bindings* (created with POST, rotated, deleted);
``/admin/<search_provider>/...`` has per-user *keys* (issued by rotate, deleted). The path segments
are the settings ``office_suite_path_segment`` and ``search_provider_path_segment`` (the contract's
neutral names by default), so ``connectors_router(settings)`` builds the routes once per pair of
segments. Everything
is scoped to the caller's tenant; a user id of another tenant answers 404. Every POST and PATCH
takes a required JSON object body (spec 4.4), ``{}`` where nothing more is needed.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agent_server.admin.connectors import KINDS, ConnectorKind
from agent_server.foundation.settings import Settings
from http_facade.routes.admin_common import ActorDep, AdminDep, audit_note


class BindingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=100)
    label: str = Field(default="", max_length=200)


class ProvisionRequest(BaseModel):
    """Nothing to choose yet: the managed configuration is the kind's default."""

    model_config = ConfigDict(extra="forbid")


class RotateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(default="", max_length=200, description="A new label; empty keeps the current one.")


def path_segments(settings: Settings) -> dict[str, str]:
    """Connector kind -> its path segment under /admin/ in this deployment."""
    return {
        "office_suite": settings.office_suite_path_segment,
        "search_provider": settings.search_provider_path_segment,
    }


def install_connectors(app: FastAPI, settings: Settings) -> None:
    """Include the connector routes, after every other /admin router: a segment that another
    /admin route already uses (``webhooks``, ``sso``, ...) is refused at start, not shadowed."""
    from fastapi.routing import iter_route_contexts

    taken = {"connectors"}
    for context in iter_route_contexts(app.router.routes):  # built so far, included routers' too
        parts = str(context.path_format or "").split("/")
        if len(parts) > 2 and parts[1] == "admin":
            taken.add(parts[2])
    clash = sorted(set(path_segments(settings).values()) & taken)
    if clash:
        raise ValueError(f"connector path segment(s) {clash} already name other /admin routes")
    app.include_router(connectors_router(settings))


def connectors_router(settings: Settings) -> APIRouter:
    """Every connector route, under the path segments this deployment names."""
    segments = path_segments(settings)
    if len(set(segments.values())) != len(segments):
        raise ValueError(f"the connector path segments must differ: {segments}")
    return _connectors_router(tuple(segments.items()))


@cache  # per process and pair of segments: every app of a process shares the routes
def _connectors_router(segments: tuple[tuple[str, str], ...]) -> APIRouter:
    router = APIRouter(tags=["admin: connectors"])
    for kind_name, segment in segments:
        _routes(router, KINDS[kind_name], segment)
    router.add_api_route(
        "/admin/connectors/health",
        connectors_health,
        methods=["GET"],
        tags=["admin: connectors"],
        summary="Health of the tenant's connectors",
    )
    return router


def _routes(router: APIRouter, kind: ConnectorKind, segment: str) -> None:
    base = f"/admin/{segment}"
    cred = kind.credential
    tag = f"admin: {segment}"

    @router.get(f"{base}/managed-status", tags=[tag], name=f"{kind.name}_managed_status")
    async def managed_status(actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
        return await admin.connectors.managed_status(actor.tenant_id, kind)

    @router.post(
        f"{base}/auto-provision",
        tags=[tag],
        name=f"{kind.name}_auto_provision",
        responses={201: {"description": "Provisioned by this call (200: it already was)."}},
    )
    async def auto_provision(
        body: ProvisionRequest, actor: ActorDep, admin: AdminDep, request: Request, response: Response
    ) -> dict[str, Any]:
        view, created = await admin.connectors.auto_provision(actor.tenant_id, kind)
        response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        audit_note(request, action=f"{kind.name}.auto_provision", details={"created": created})
        return {**view, "provisioned": created}

    @router.get(f"{base}/", tags=[tag], name=f"{kind.name}_get")
    async def get_config(actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
        return await admin.connectors.get(actor.tenant_id, kind)

    @router.patch(f"{base}/", tags=[tag], name=f"{kind.name}_patch")
    async def patch_config(
        actor: ActorDep, admin: AdminDep, request: Request, body: Annotated[dict[str, Any], Body()]
    ) -> dict[str, Any]:
        view = await admin.connectors.patch(actor.tenant_id, kind, body)
        audit_note(request, action=f"{kind.name}.configure", details={"fields": sorted(body)})
        return view

    @router.delete(f"{base}/", tags=[tag], name=f"{kind.name}_delete")
    async def delete_config(actor: ActorDep, admin: AdminDep, request: Request) -> dict[str, Any]:
        await admin.connectors.delete(actor.tenant_id, kind)
        audit_note(request, action=f"{kind.name}.delete")
        return {"kind": kind.name, "deleted": True}

    @router.get(f"{base}/{cred}", tags=[tag], name=f"{kind.name}_{cred}_list")
    async def list_credentials(actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
        return {"object": "list", "data": await admin.connectors.credentials(actor.tenant_id, kind)}

    if not kind.rotate_creates:

        @router.post(
            f"{base}/{cred}",
            tags=[tag],
            name=f"{kind.name}_{cred}_create",
            status_code=status.HTTP_201_CREATED,
        )
        async def create_credential(
            body: BindingCreate, actor: ActorDep, admin: AdminDep, request: Request
        ) -> dict[str, Any]:
            view = await admin.connectors.issue(actor.tenant_id, kind, body.user_id, body.label)
            audit_note(request, action=f"{kind.name}.{cred}.create", target=body.user_id)
            return view

    @router.post(f"{base}/{cred}/{{userId}}/rotate", tags=[tag], name=f"{kind.name}_{cred}_rotate")
    async def rotate_credential(
        userId: str, body: RotateRequest, actor: ActorDep, admin: AdminDep, request: Request
    ) -> dict[str, Any]:
        view = await admin.connectors.issue(actor.tenant_id, kind, userId, body.label, rotate=True)
        audit_note(request, action=f"{kind.name}.{cred}.rotate", target=userId)
        return view

    @router.delete(f"{base}/{cred}/{{userId}}", tags=[tag], name=f"{kind.name}_{cred}_delete")
    async def delete_credential(
        userId: str, actor: ActorDep, admin: AdminDep, request: Request
    ) -> dict[str, Any]:
        await admin.connectors.revoke(actor.tenant_id, kind, userId)
        audit_note(request, action=f"{kind.name}.{cred}.delete", target=userId)
        return {"user_id": userId, "deleted": True}


async def connectors_health(actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
    report = await admin.connectors.health(actor.tenant_id)
    healthy = all(item["status"] in ("ok", "not_configured", "disabled") for item in report)
    return {"status": "ok" if healthy else "degraded", "connectors": report}
