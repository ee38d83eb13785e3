"""The signed-in admin's tenant and its plan, which several dashboard pages show or offer from."""

from __future__ import annotations

from starlette.requests import Request

from agent_server.foundation.errors import NotFound
from agent_server.gateway.plans import PlanInfo
from agent_server.gateway.repository import find_tenant
from agent_server.gateway.tables import Tenant
from http_facade.pages.dashboard.session import Session


async def tenant_of(request: Request, session: Session) -> tuple[Tenant, PlanInfo]:
    gateway = request.app.state.gateway
    tenant = await find_tenant(gateway.db, session.tenant_id)
    if tenant is None:
        raise NotFound("The organisation of this session no longer exists.")
    return tenant, gateway.catalog.get(tenant.plan_id)
