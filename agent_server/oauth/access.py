"""The resource server's side: an access token on ``/v1`` acts as a key of the consenting person's
organisation, with the token's scopes (within the plan's), for the resource it was issued for.

Each process keeps an answer at most ``key_cache_ttl_seconds`` (as for API keys), so a revocation
(RFC 7009, a reused refresh token) reaches every process within that time, and so does a person
leaving the organisation or losing a role that may use the gateway (owner, admin, developer).
"""

from __future__ import annotations

from agent_server.accounts.roles import BUILDERS
from agent_server.capabilities.context import Principal
from agent_server.foundation.clock import Clock
from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.plans import PlanCatalog
from agent_server.gateway.tables import Tenant, User, unix
from agent_server.oauth.store import OAuthStore
from agent_server.oauth.vocabulary import digest


class AccessTokens:
    def __init__(
        self,
        store: OAuthStore,
        catalog: PlanCatalog,
        clock: Clock,
        *,
        resource: str,
        environment: str,
        ttl: float,
        negotiated_limit: int,
    ) -> None:
        self.store, self.catalog, self.clock = store, catalog, clock
        self.resource, self.environment, self.ttl, self.negotiated_limit = (
            resource,
            environment,
            ttl,
            negotiated_limit,
        )
        # token digest -> (the /v1 principal, the MCP caller, until when the answer is trusted)
        self._cache: dict[str, tuple[KeyPrincipal | None, Principal | None, float]] = {}

    def forget(self) -> None:
        """Drop every cached answer (a revocation made here)."""
        self._cache.clear()

    async def principal(self, token: str) -> KeyPrincipal | None:
        """The token as ``/v1`` uses it: a key of the organisation, with the token's scopes in the plan's."""
        found, _ = await self._lookup(token)
        return found

    async def caller(self, token: str) -> Principal | None:
        """The token as the MCP endpoint uses it: the person, the organisation and every scope it holds."""
        _, caller = await self._lookup(token)
        return caller

    async def _lookup(self, token: str) -> tuple[KeyPrincipal | None, Principal | None]:
        key, now = digest(token), self.clock.now()
        cached = self._cache.get(key)
        if cached is not None and cached[2] > now:
            found, caller = cached[0], cached[1]
        else:
            found, caller = await self._load(token)
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (found, caller, now + self.ttl)
        if found is None or (found.expires_at is not None and now >= found.expires_at):
            return None, None
        return found, caller

    async def _load(self, token: str) -> tuple[KeyPrincipal | None, Principal | None]:
        row = await self.store.access(token)
        if row is None or row.resource != self.resource:  # a token for another resource is refused
            return None, None
        async with self.store.db.session() as session:
            tenant = await session.get(Tenant, row.tenant_id)
            person = await session.get(User, row.user_id)
        # The person must still be a member whose role may use the gateway: leaving the organisation
        # or losing the role ends their apps' access too.
        if (
            tenant is None
            or person is None
            or person.tenant_id != row.tenant_id
            or person.role not in BUILDERS.roles
        ):
            return None, None
        plan = self.catalog.get(tenant.plan_id)
        scopes = frozenset(row.scope.split())
        caller = Principal(subject=row.user_id, scopes=scopes, tenant_id=row.tenant_id)
        key = KeyPrincipal(
            key_id=row.id,
            tenant_id=row.tenant_id,
            scopes=scopes & plan.scopes,
            environment=self.environment,
            plan=plan,
            rate_limit=plan.limit_for(tenant.rate_limit_per_minute, self.negotiated_limit),
            expires_at=unix(row.access_expires_at),
        )
        return key, caller
