"""Sign-in discovery: which identity provider signs in an e-mail address (POST /sso/discover).

The tenant is the one that verified the address's domain; OIDC is preferred when it has both an
OIDC and a SAML connection enabled. A tenant whose plan lacks single sign-on (after a downgrade)
signs nobody in with it: 404, as if it had no connection.
"""

from __future__ import annotations

from sqlalchemy import select

from agent_server.accounts.sso.enforcement import plan_has_sso
from agent_server.accounts.sso.provision import domain_of, tenant_for_domain
from agent_server.accounts.tables import SsoConnection
from agent_server.foundation.errors import NotFound
from agent_server.gateway.plans import PlanCatalog
from agent_server.gateway.tables import Tenant
from agent_server.policies.ratelimit import Policy
from agent_server.storage.db import Database

# Per client address: it tells which domains sign in with SSO, so it is not for bulk look-ups.
DISCOVERIES_PER_IP = Policy("sso-discover-ip", 60, 60, fail_open=True)
PREFERENCE = ("oidc", "saml")
START_PATHS = {"oidc": "/sso/oidc/{tenant_id}/start", "saml": "/sso/saml/{tenant_id}/start"}


async def discover(db: Database, catalog: PlanCatalog, base_url: str, email: str) -> dict[str, str]:
    """``{protocol, tenant_id, start_url}``, or 404 when no tenant signs this address in with SSO."""
    domain = domain_of(email)
    tenant_id = await tenant_for_domain(db, domain)
    protocols: set[str] = set()
    if tenant_id is not None:
        query = select(SsoConnection.protocol).where(
            SsoConnection.tenant_id == tenant_id,
            SsoConnection.enabled.is_(True),  # type: ignore[attr-defined]
        )
        async with db.session() as session:
            plan_id = await session.scalar(select(Tenant.plan_id).where(Tenant.id == tenant_id))
            if plan_id is not None and plan_has_sso(catalog, plan_id):
                protocols = set((await session.execute(query)).scalars())
    protocol = next((name for name in PREFERENCE if name in protocols), None)
    if tenant_id is None or protocol is None:
        raise NotFound(
            f"No organisation signs in {domain} addresses with single sign-on; sign in with a password "
            "or a passkey.",
            code="sso_not_available",
            param="email",
        )
    path = START_PATHS[protocol].format(tenant_id=tenant_id)
    return {"protocol": protocol, "tenant_id": tenant_id, "start_url": base_url.rstrip("/") + path}
