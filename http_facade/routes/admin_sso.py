"""Single sign-on administration of the caller's tenant: the OIDC connection, domains, enforcement.

Every route needs a tenant admin JWT and acts on the token's tenant only; another tenant's domain
answers 404 like a missing one. Client secrets are write-only. The logic is in
agent_server/accounts/sso/ (docs/accounts.md, "Single sign-on").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from agent_server.accounts.sso import lockout
from agent_server.accounts.sso.connections import DEFAULT_SCOPES, OidcSettings, connection_view
from agent_server.accounts.sso.domains import DomainClaims
from agent_server.accounts.sso.enforcement import plan_has_sso, set_enforced
from agent_server.accounts.sso.service import Sso, sso_of
from agent_server.accounts.tables import TenantDomain
from agent_server.foundation.timeutil import iso
from agent_server.gateway.repository import find_tenant
from http_facade.routes.admin_common import ActorDep, audit_note, require_feature

router = APIRouter(tags=["admin: single sign-on"])

Scope = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[\x21\x23-\x5b\x5d-\x7e]+$")]
Permission = Annotated[str, Field(min_length=1, max_length=40)]
DomainPath = Annotated[str, Path(min_length=1, max_length=253, description="e.g. example.com")]
Protocol = Annotated[Literal["oidc", "saml"], Path(description="oidc or saml")]


class OidcBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    issuer: str = Field(
        min_length=8,
        max_length=2048,
        pattern=r"^https?://\S+$",
        description="The provider's issuer identifier; its /.well-known/openid-configuration is fetched now.",
    )
    client_id: str = Field(min_length=1, max_length=255)
    client_secret: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="Stored encrypted, never shown again. Omit it to keep the stored one (same issuer and "
        "client id only).",
    )
    scopes: list[Scope] = Field(default=list(DEFAULT_SCOPES), min_length=1, max_length=20)
    enabled: StrictBool = True
    jit_permissions: list[Permission] = Field(
        default=["tenant:admin"], max_length=5, description="Given to users created at first sign-in."
    )


class EnforcementBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enforced: StrictBool = Field(description="true: members sign in through the identity provider only.")


class ConnectionState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: StrictBool = Field(description="false: keep the settings but refuse sign-ins through it.")


class DomainBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domain: str = Field(min_length=3, max_length=253, description="An e-mail domain, e.g. example.com.")


def sso(request: Request) -> Sso:
    return sso_of(request.app.state.accounts)


def domain_view(claims: DomainClaims, row: TenantDomain) -> dict[str, Any]:
    return {
        "domain": row.domain,
        "verified": row.verified_at is not None,
        "verified_at": iso(row.verified_at) if row.verified_at else None,
        "created_at": iso(row.created_at),
        "record": claims.record(row).view(),
    }


@router.get("/admin/sso", summary="The tenant's SSO connections (without secrets), domains and enforcement")
async def overview(request: Request, actor: ActorDep) -> dict[str, Any]:
    service = sso(request)
    tenant = await find_tenant(request.app.state.gateway.db, actor.tenant_id)
    enforced = tenant is not None and tenant.sso_enforced
    # A plan without single sign-on suspends enforcement (docs/accounts.md), so say whether it applies.
    applies = enforced and plan_has_sso(request.app.state.gateway.catalog, tenant.plan_id)  # type: ignore[union-attr]
    return {
        "enforced": enforced,
        "enforcement_applies": applies,
        "oidc_redirect_uri": service.oidc.redirect_uri,
        "connections": [connection_view(c) for c in await service.connections.of_tenant(actor.tenant_id)],
        "domains": [
            domain_view(service.domains, d) for d in await service.domains.of_tenant(actor.tenant_id)
        ],
    }


@router.put("/admin/sso/oidc", summary="Create or replace the tenant's OpenID Connect provider")
async def put_oidc(body: OidcBody, request: Request, actor: ActorDep) -> dict[str, Any]:
    await require_feature(request, actor, "sso")  # single sign-on is a plan feature (plans.yaml)
    wanted = OidcSettings(
        body.issuer,
        body.client_id,
        body.client_secret,
        tuple(body.scopes),
        body.enabled,
        tuple(body.jit_permissions),
    )
    conn = await sso(request).connections.save_oidc(actor.tenant_id, wanted)
    audit_note(request, action="sso.oidc.saved", target=conn.id, details={"issuer": body.issuer})
    return {**connection_view(conn), "redirect_uri": sso(request).oidc.redirect_uri}


@router.delete(
    "/admin/sso/oidc", status_code=status.HTTP_204_NO_CONTENT, summary="Delete the tenant's OIDC connection"
)
async def delete_oidc(request: Request, actor: ActorDep) -> Response:
    await sso(request).connections.delete(actor.tenant_id, "oidc")
    audit_note(request, action="sso.oidc.deleted")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.patch(
    "/admin/sso/connections/{protocol}", summary="Enable or disable a connection, keeping its settings"
)
async def patch_connection(
    protocol: Protocol, body: ConnectionState, request: Request, actor: ActorDep
) -> dict[str, Any]:
    if body.enabled:
        await require_feature(request, actor, "sso")
    conn = await sso(request).connections.set_enabled(actor.tenant_id, protocol, body.enabled)
    action = f"sso.{protocol}.{'enabled' if body.enabled else 'disabled'}"
    audit_note(request, action=action, target=conn.id)
    return connection_view(conn)


@router.get(
    "/admin/sso/enforcement-impact",
    summary="Who turning enforcement on would sign out now, and lock out (no verified domain)",
)
async def enforcement_impact(request: Request, actor: ActorDep) -> dict[str, Any]:
    impact = await lockout.enforcement_impact(request.app.state.gateway.db, actor.tenant_id)
    return {"object": "sso_enforcement_impact", **impact.view()}


@router.patch("/admin/sso", summary="Turn SSO enforcement on or off (on needs a connection and a domain)")
async def patch_enforcement(body: EnforcementBody, request: Request, actor: ActorDep) -> dict[str, Any]:
    if body.enforced:
        await require_feature(request, actor, "sso")
    await set_enforced(request.app.state.gateway.db, actor.tenant_id, body.enforced)
    audit_note(request, action="sso.enforcement", details={"enforced": body.enforced})
    return {"enforced": body.enforced}


@router.post(
    "/admin/sso/domains",
    status_code=status.HTTP_201_CREATED,
    summary="Claim an e-mail domain: answers the DNS TXT record to publish",
)
async def claim_domain(
    body: DomainBody, request: Request, response: Response, actor: ActorDep
) -> dict[str, Any]:
    claims = sso(request).domains
    row, created = await claims.claim(actor.tenant_id, body.domain)
    if not created:
        response.status_code = status.HTTP_200_OK
    audit_note(request, action="sso.domain.claimed", target=row.domain)
    return domain_view(claims, row)


@router.post("/admin/sso/domains/{domain}/verify", summary="Look the domain's TXT record up and verify it")
async def verify_domain(domain: DomainPath, request: Request, actor: ActorDep) -> dict[str, Any]:
    claims = sso(request).domains
    row = await claims.verify(actor.tenant_id, domain)
    audit_note(request, action="sso.domain.verified", target=row.domain)
    return domain_view(claims, row)


@router.get("/admin/sso/domains", summary="The tenant's claimed and verified domains")
async def list_domains(request: Request, actor: ActorDep) -> dict[str, Any]:
    claims = sso(request).domains
    return {
        "object": "list",
        "data": [domain_view(claims, d) for d in await claims.of_tenant(actor.tenant_id)],
    }


@router.delete(
    "/admin/sso/domains/{domain}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a domain claim"
)
async def delete_domain(domain: DomainPath, request: Request, actor: ActorDep) -> Response:
    await sso(request).domains.remove(actor.tenant_id, domain)
    audit_note(request, action="sso.domain.deleted", target=domain)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
