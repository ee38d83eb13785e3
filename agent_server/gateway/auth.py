"""API key authentication for /v1: offline format check, then an in-process cache, then the database.

Revocation and the cache (docs/gateway.md, "Revocation"):

- This process: revoke and rotate call ``invalidate(digest)``, so the very next request with the
  old key misses the cache, reads the revoked row and gets 401. A generation counter stops a lookup
  that started before the revocation from putting its stale answer back into the cache.
- Other processes: each trusts a cached answer for at most ``ttl`` seconds (setting
  ``key_cache_ttl_seconds``, at most 1 s), then reads the database again. A revocation therefore
  reaches every process within ``ttl``, at the price of one indexed query per key per ``ttl`` per
  process. We chose that over a revocation marker in the KV, which would cost a KV round trip on
  every request; the database is the one source of truth in every deployment, Redis or not.

Concurrent misses of one key share one query (single flight), so a burst on a cold key costs one
query, not one per request. Unknown and revoked keys are cached too (as ``None``), and the cache is
bounded, so garbage keys can neither fill memory nor force a query per request.

A key's optional settings (model allow-list, budget, expiry) and its tenant's own provider keys
(BYOK, decrypted once per lookup) are cached with it, so enforcing them costs no query either. An
expired key is refused like a revoked one (401 ``invalid_api_key``), with a message that says so.

A key a rotation left an overlap carries the moment it stops (``revokes_at``), compared with the
clock on every request like an expiry: when the overlap ends, every process refuses it from its own
cache, with no invalidation or event needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway import keys
from agent_server.gateway.budgets import Budget, budget_of
from agent_server.gateway.byok import ProviderCredential
from agent_server.gateway.plans import PlanCatalog, PlanInfo
from agent_server.gateway.repository import key_by_digest
from agent_server.gateway.tables import unix
from agent_server.gateway.tokens import bearer_challenge
from agent_server.llm.grants import ModelGrant
from agent_server.storage.db import Database

Credentials = Callable[[Iterable[tuple[str, int, str]]], dict[str, ProviderCredential]]
# Resolves an OAuth access token (docs/oauth.md) to the principal it acts as; None: not a live one.
BearerTokens = Callable[[str], Awaitable["KeyPrincipal | None"]]
# The key_id of an access token's usage rows is the token's row id, which starts so
# (agent_server/oauth/store.py): such rows count like a live key's where the deployment is live.
TOKEN_KEY_PREFIX = "oat_"


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    key_id: str
    tenant_id: str
    scopes: frozenset[str]
    environment: str  # "test" keys always use the sandbox mock
    plan: PlanInfo
    rate_limit: int
    models: ModelGrant | None = None  # the key's allow-list; None: whatever the plan grants
    budget: Budget | None = None
    expires_at: float | None = None
    byok: Mapping[str, ProviderCredential] = field(default_factory=dict, repr=False)  # by provider
    revokes_at: float | None = None  # the end of a rotation's overlap
    log_bodies_days: int | None = None  # keep request bodies that many days (request_log_bodies.py)


class KeyAuthenticator:
    def __init__(
        self,
        db: Database,
        catalog: PlanCatalog,
        clock: Clock,
        *,
        ttl: float,
        negotiated_limit: int,
        realm: str,
        credentials: Credentials = lambda rows: {},
        max_entries: int = 20_000,
    ) -> None:
        self._db, self._catalog, self._clock, self._credentials = db, catalog, clock, credentials
        self.ttl, self._negotiated_limit, self._max_entries = ttl, negotiated_limit, max_entries
        self._challenge = {"WWW-Authenticate": bearer_challenge(realm)}
        self._cache: dict[str, tuple[KeyPrincipal | None, float]] = {}
        self._inflight: dict[str, asyncio.Future[KeyPrincipal | None]] = {}
        self._generation = 0
        self.bearer: BearerTokens | None = None  # set when the OAuth server is served
        self.bearer_prefix = ""

    def refuse(self, message: str) -> AuthFailed:
        return AuthFailed(message, headers=self._challenge)

    async def authenticate(self, raw: str | None) -> KeyPrincipal:
        if not raw:
            raise self.refuse("Missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'.")
        parsed = keys.parse(raw)
        if parsed is None and self.bearer is not None and raw.startswith(self.bearer_prefix):
            token_principal = await self.bearer(raw)
            if token_principal is None:
                raise self.refuse("Invalid, expired or revoked access token; refresh it or sign in again.")
            return token_principal
        if parsed is None:
            raise self.refuse("Malformed API key.")
        environment, body = parsed
        digest = keys.digest(body)
        entry = self._cache.get(digest)
        if entry is not None and entry[1] > self._clock.now():
            principal = entry[0]
        else:
            principal = await self._load(digest)
        if (
            principal is None
            or (environment is not None and environment != principal.environment)
            or (principal.revokes_at is not None and self._clock.now() >= principal.revokes_at)
        ):
            raise self.refuse("Invalid or revoked API key.")
        if principal.expires_at is not None and self._clock.now() >= principal.expires_at:
            raise self.refuse(f"This API key expired at {iso(utc(principal.expires_at))}; use another key.")
        return principal

    async def by_digest(self, digest: str) -> KeyPrincipal:
        """The principal of a stored key digest (a batch runs its lines as the key that created it),
        refused like ``authenticate`` once the key is revoked or expired."""
        entry = self._cache.get(digest)
        fresh = entry is not None and entry[1] > self._clock.now()
        principal = entry[0] if fresh and entry is not None else await self._load(digest)
        now = self._clock.now()
        if principal is None or (principal.revokes_at is not None and now >= principal.revokes_at):
            raise self.refuse("The API key of this batch was revoked.")
        if principal.expires_at is not None and now >= principal.expires_at:
            raise self.refuse(f"The API key of this batch expired at {iso(utc(principal.expires_at))}.")
        return principal

    def invalidate(self, digest: str) -> None:
        self._generation += 1
        self._cache.pop(digest, None)

    def invalidate_tenant(self, tenant_id: str) -> None:
        """Forget every cached key of a tenant (its BYOK keys changed); an admin action, O(cache)."""
        self._generation += 1
        for digest, (principal, _) in list(self._cache.items()):
            if principal is not None and principal.tenant_id == tenant_id:
                del self._cache[digest]

    async def _load(self, digest: str) -> KeyPrincipal | None:
        pending = self._inflight.get(digest)
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and task is not None and not task.cancelling():
                    return await self._load(digest)  # the leader was cancelled, not us: try again
                raise
        future: asyncio.Future[KeyPrincipal | None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_consume)
        self._inflight[digest] = future
        generation = self._generation
        try:
            principal = await self._query(digest)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            raise
        finally:
            self._inflight.pop(digest, None)
        future.set_result(principal)
        if generation == self._generation:
            self._store(digest, principal)
        return principal

    async def _query(self, digest: str) -> KeyPrincipal | None:
        row = await key_by_digest(self._db, digest, self._clock.now())
        if row is None or row.revoked:
            return None
        plan = self._catalog.get(row.plan_id)
        return KeyPrincipal(
            key_id=row.key_id,
            tenant_id=row.tenant_id,
            scopes=frozenset(row.scopes),
            environment=row.environment,
            plan=plan,
            rate_limit=plan.limit_for(row.rate_limit_override, self._negotiated_limit),
            models=ModelGrant(row.models) if row.models is not None else None,
            budget=budget_of(row.budget_period, row.budget_tokens, row.budget_spend),
            expires_at=unix(row.expires_at) if row.expires_at is not None else None,
            byok=self._credentials(row.provider_keys) if row.provider_keys else {},
            revokes_at=unix(row.revokes_at) if row.revokes_at is not None else None,
            log_bodies_days=row.log_bodies_days,
        )

    def _store(self, digest: str, principal: KeyPrincipal | None) -> None:
        cache = self._cache
        cache.pop(digest, None)  # re-insert at the end: the dict's order is the eviction order
        if len(cache) >= self._max_entries:
            for stale in list(cache)[: max(1, self._max_entries // 10)]:
                del cache[stale]
        cache[digest] = (principal, self._clock.now() + self.ttl)


def _consume(future: asyncio.Future[KeyPrincipal | None]) -> None:
    # Mark a failed lookup's exception as seen even when nobody else was waiting for it.
    if not future.cancelled():
        future.exception()
