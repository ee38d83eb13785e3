"""What every admin route of this package shares: the acting member, the platform check, the services.

Authentication and the role check are the route policy's (``http_facade.gateway_deps.admin_claims``
→ ``http_facade/role_policy.py``: a valid admin JWT, 401 otherwise; 403 ``role_not_allowed`` for a
role the route's entry does not admit). Tenant-scoped routes act on the token's tenant only; routes
that change the whole platform also need ``platform:admin``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from agent_server.admin.wiring import AdminServices, admin_services
from agent_server.foundation.errors import NotFound, PermissionDenied
from agent_server.gateway.repository import find_tenant
from agent_server.gateway.tokens import AdminClaims
from http_facade.audit_trail import AUDIT_STATE
from http_facade.deps import client_ip
from http_facade.gateway_deps import admin_claims

PLATFORM_ADMIN = "platform:admin"


@dataclass(frozen=True)
class Actor:
    user_id: str
    tenant_id: str  # "" for a user of no organisation
    permissions: frozenset[str]
    ip: str
    role: str | None = None  # the member's role now (roles.py)

    @property
    def platform(self) -> bool:
        return PLATFORM_ADMIN in self.permissions


async def current_actor(request: Request, claims: Annotated[AdminClaims, Depends(admin_claims)]) -> Actor:
    actor = Actor(claims.user_id, claims.tenant_id, claims.permissions, client_ip(request), claims.role)
    request.state.admin_actor = actor  # read by the audit middleware
    return actor


async def platform_actor(actor: Annotated[Actor, Depends(current_actor)]) -> Actor:
    if not actor.platform:
        raise PermissionDenied(
            "This route changes the whole platform and needs the platform:admin permission."
        )
    return actor


def get_admin(request: Request) -> AdminServices:
    return admin_services(request.app.state.services)


async def require_feature(request: Request, actor: Actor, feature: str) -> None:
    """403 plan_limit_exceeded when the tenant's plan lacks ``feature`` (e.g. webhooks, audit_log)."""
    gateway = request.app.state.gateway
    tenant = await find_tenant(gateway.db, actor.tenant_id)
    if tenant is None:
        raise NotFound("The tenant of this token no longer exists.")
    gateway.catalog.check_feature(gateway.catalog.get(tenant.plan_id), feature)


def audit_note(request: Request, **fields: Any) -> None:
    """Add ``action``, ``target``, ``details`` or ``tenant_id`` to this request's audit entry."""
    note = getattr(request.state, AUDIT_STATE, None) or {}
    note.update(fields)
    setattr(request.state, AUDIT_STATE, note)


ActorDep = Annotated[Actor, Depends(current_actor)]
PlatformDep = Annotated[Actor, Depends(platform_actor)]
AdminDep = Annotated[AdminServices, Depends(get_admin)]
