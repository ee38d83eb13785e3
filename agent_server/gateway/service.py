"""The gateway facade: what the HTTP routes and the CLI call. Built once per app by ``create_app``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from agent_server.accounts.roles import Access
from agent_server.accounts.sessions import Sessions, SignedIn
from agent_server.accounts.sso.enforcement import is_enforced
from agent_server.capabilities.services import Services
from agent_server.foundation.errors import AuthFailed, PermissionDenied, QuotaExceeded
from agent_server.foundation.request_context import REQUEST_ID
from agent_server.foundation.tasks import stop_tasks
from agent_server.gateway import model_access
from agent_server.gateway import repository as repo
from agent_server.gateway.auth import KeyAuthenticator, KeyPrincipal
from agent_server.gateway.bootstrap import bootstrap
from agent_server.gateway.budgets import BudgetLedger
from agent_server.gateway.byok import ByokVault, missing
from agent_server.gateway.byok_llm import ByokClients
from agent_server.gateway.key_admin import KeyAdmin
from agent_server.gateway.key_settings import KeyOptions
from agent_server.gateway.login_throttle import LoginThrottle
from agent_server.gateway.model_table import ModelTable
from agent_server.gateway.passwords import hash_password, needs_rehash, verify_password
from agent_server.gateway.plans import PlanCatalog, seed_plans
from agent_server.gateway.quota import QuotaGate
from agent_server.gateway.ratelimit import RateLimiter
from agent_server.gateway.tables import ApiKey, User
from agent_server.gateway.tokens import AdminClaims, TokenService, bearer_challenge, signing_secret
from agent_server.gateway.usage import UsageRow, UsageWriter
from agent_server.llm.types import LLMBackend
from agent_server.observability.instruments import INSTRUMENTS
from agent_server.policies.versions import CURRENT_VERSION
from agent_server.storage.kv import RedisKV

log = logging.getLogger("agentgate.gateway")
METERED_SCOPES = frozenset({"chat", "embeddings"})  # the scopes whose requests spend a budget


class Caller(NamedTuple):
    """An admitted /v1 request: who, and the rate-limit headers every response of it carries.

    A NamedTuple because one is built per request and a frozen dataclass costs several times more.
    """

    principal: KeyPrincipal
    headers: dict[str, str]
    started: float  # perf_counter at admission, for the usage record's latency


class Gateway:
    def __init__(self, services: Services, current_version: str = CURRENT_VERSION) -> None:
        settings = services.settings
        self.services, self.db, self.clock = services, services.db, services.clock
        self.current_version = current_version  # what usage rows of requests that pin none record
        self.environment = "test" if settings.sandbox else "live"
        # Models declared once: the catalogue plus the upstream settings, priced in minor units.
        self.models = ModelTable(services.knowledge.pack.models, settings.upstreams)
        self.catalog = PlanCatalog(self.models)
        self.byok = ByokVault(services.db, services.clock, settings, self.models.providers)
        self.byok_clients = ByokClients(settings, self.models)
        self.budgets = BudgetLedger(services.kv, services.db, services.clock, self.models.currency)
        realm = settings.service_name
        self.tokens = TokenService(
            signing_secret(settings),
            issuer=settings.public_base_url.rstrip("/"),
            audience=f"{settings.service_name}:admin",
            ttl=settings.jwt_ttl_seconds,
            clock=services.clock,
            realm=realm,
        )
        self.sessions = Sessions(services.db, self.tokens)
        self.keys = KeyAuthenticator(
            services.db,
            self.catalog,
            services.clock,
            ttl=settings.key_cache_ttl_seconds,
            negotiated_limit=settings.negotiated_rate_limit,
            realm=realm,
            credentials=self.byok.credentials,
        )
        self.key_admin = KeyAdmin(self)
        self.limiter = RateLimiter(services.kv, services.clock, settings.rate_limit_window_seconds)
        # With Redis, usage rows are durable before the response (a Redis list drained in batches).
        usage_log = services.kv if isinstance(services.kv, RedisKV) else None
        self.usage = UsageWriter(services.db, log=usage_log)
        self.quota = QuotaGate(services.db, services.clock, tokens_live=self.environment == "live")
        self._tasks: list[asyncio.Task[None]] = []
        self._scope_challenge = bearer_challenge(realm, "insufficient_scope")

    # -- lifecycle -------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        await self.start()
        try:
            yield self
        finally:
            await self.stop()

    async def start(self) -> None:
        pack = self.services.knowledge.pack
        await seed_plans(self.db, pack.plans, self.clock.now())
        await self.catalog.load(self.db)
        await bootstrap(self.services)
        await self.usage.start()
        # Scans at once, then every few seconds (a failing database only delays it).
        every = self.services.settings.quota_check_seconds
        self._tasks.append(asyncio.create_task(self.quota.run(every), name="token-quota"))
        self._tasks.append(asyncio.create_task(self.budgets.run(every), name="key-budgets"))

    async def stop(self) -> None:
        await stop_tasks(self._tasks)
        await self.usage.stop()
        await self.byok_clients.aclose()
        await self.services.events.drain()

    # -- the /v1 hot path ------------------------------------------------------------------------

    async def admit(self, raw_key: str | None, scope: str) -> Caller:
        """Authenticate, count against the key's limit, check the route's scope (spec 5.1 order)."""
        started = time.perf_counter()
        principal = await self.keys.authenticate(raw_key)
        headers = (await self.limiter.hit(principal.key_id, principal.rate_limit)).headers()
        if scope not in principal.scopes:
            raise PermissionDenied(
                f"This API key lacks the '{scope}' scope; create a key with it.",
                headers={**headers, "WWW-Authenticate": f'{self._scope_challenge}, scope="{scope}"'},
            )
        if principal.budget is not None and scope in METERED_SCOPES:
            try:  # one KV read per limited quantity, for keys with a budget only
                await self.budgets.check(principal.key_id, principal.budget)
            except QuotaExceeded as err:
                err.headers.update(headers)
                raise
        return Caller(principal, headers, started)

    def entitle(
        self, caller: Caller, model: str, *, stream: bool = False, feature: str | None = None
    ) -> None:
        """What the plan and the key allow for this request, checked after the body is read: the
        model (plan, key allow-list, the tenant's own key for a BYOK model), the monthly quota,
        streaming and an endpoint's feature. Every /v1 endpoint calls it, so a rule added here
        holds on all of them. (The key's budget is checked by ``admit``.)"""
        principal = caller.principal
        self.catalog.check_model(principal.plan, model)
        if principal.models is not None and not principal.models.allows(model):
            raise PermissionDenied(
                f"This API key may not call the model '{model}'; GET /v1/models lists the ones it may.",
                code="model_not_allowed",
                param="model",
            )
        provider = self.models.byok.get(model)
        if provider is not None and provider not in principal.byok:
            raise missing(provider, model)
        self.quota.check(principal)
        if stream:
            self.catalog.check_feature(principal.plan, "streaming")
        if feature is not None:
            self.catalog.check_feature(principal.plan, feature)
        self.services.extras["billing.standing"].check(principal)  # trial ended, payment overdue: 402

    def llm_for(self, principal: KeyPrincipal, model: str) -> LLMBackend:
        """Sandbox keys always get the deterministic mock; live keys get the router, except that a
        BYOK model goes to an upstream client holding the tenant's own key (byok_llm.py)."""
        if principal.environment == "test":
            return self.services.sandbox_llm
        if principal.byok:
            return self.byok_clients.for_model(principal, model) or self.services.llm
        return self.services.llm

    async def callable_models(self, caller: Caller) -> list[dict[str, Any]]:
        """``GET /v1/models``: the model objects this key may call (model_access.py)."""
        return await model_access.callable_models(caller.principal, self.models, self.services.llm)

    async def callable_model(self, caller: Caller, model: str) -> dict[str, Any] | None:
        """``GET /v1/models/{id}``: the model object, or None when this key may not call it."""
        return await model_access.callable_model(caller.principal, model, self.models, self.services.llm)

    async def record(
        self,
        caller: Caller,
        endpoint: str,
        model: str,
        status: int,
        backend: str,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        stream: bool = False,
        api_version: str | None = None,
        error_code: str | None = None,
        ttft_ms: float | None = None,
        upstream: str | None = None,
        model_served: str | None = None,
        row_token: str | None = None,
        discount_percent: int = 0,
    ) -> None:
        """Queue the request's usage row with its cost, and count it against the key's budget;
        ``api_version`` is the version the client pinned, if any. Sandbox keys are never charged.
        The row is also the request log's entry (request_log.py), with the edge's request id.
        ``discount_percent`` is taken off the cost of a batch line's row."""
        principal = caller.principal
        INSTRUMENTS.count_tokens(model, prompt_tokens, completion_tokens)  # the Prometheus token counter
        cost, currency = 0, None
        if principal.environment == "live":
            price = self.models.prices.get(model)
            if price is not None:
                cost, currency = prompt_tokens * price[0] + completion_tokens * price[1], self.models.currency
                if discount_percent:  # a batch line at the plan's batch discount (docs/batches.md)
                    cost = cost * (100 - discount_percent) // 100
        await self.usage.append(
            UsageRow(
                principal.tenant_id,
                principal.key_id,
                model,
                endpoint,
                prompt_tokens,
                completion_tokens,
                round((time.perf_counter() - caller.started) * 1000, 3),
                status,
                backend,
                stream,
                self.clock.now(),
                row_token,  # None unless a stored body names the row; positional: keywords cost ~90 ns
                api_version or self.current_version,
                cost,
                currency,
                REQUEST_ID.get(),
                model_served,
                upstream,
                error_code,
                ttft_ms,
            )
        )
        if principal.budget is not None and (prompt_tokens or completion_tokens):
            await self.budgets.add(
                principal.key_id, principal.budget, prompt_tokens + completion_tokens, cost
            )

    # -- administration --------------------------------------------------------------------------

    async def login(self, email: str, password: str, *, client: str | None = None) -> SignedIn:
        """A session for e-mail and password. Every failure looks the same and costs one argon2
        verify; failures slow down further attempts of that address and account (login_throttle.py),
        never a correct password from another address."""
        throttle = LoginThrottle(self.services.kv, self.clock)
        attempt = await throttle.admit(email, client)
        user = await repo.find_user(self.db, email)
        if not await verify_password(user.password_hash if user else None, password) or user is None:
            await throttle.failed(attempt)
            raise AuthFailed(
                "Wrong e-mail or password.", code="invalid_credentials", headers=self.tokens.challenge
            )
        await throttle.succeeded(attempt)
        assert user.password_hash is not None  # verify_password is False without a stored hash
        await self.refuse_if_sso_enforced(user)
        if needs_rehash(user.password_hash):
            await repo.set_password_hash(self.db, user.id, await hash_password(password))
        return self.sessions.issue(user)

    async def refuse_if_sso_enforced(self, user: User) -> None:
        """Members of an SSO-enforced tenant sign in through its identity provider only.

        Platform administrators keep password and passkey sign-in as the break-glass way back in; a
        tenant whose plan lacks single sign-on is not enforced (else a downgrade would lock it out).
        """
        if "platform:admin" in user.permissions or user.tenant_id is None:
            return
        if not await is_enforced(self.db, user.tenant_id, self.catalog):  # the flag, on a plan with sso
            return
        raise PermissionDenied(
            "Your organisation signs in through its identity provider; use single sign-on "
            "(POST /sso/discover with your e-mail address).",
            code="sso_required",
        )

    async def authenticate_user(self, token: str | None) -> AdminClaims:
        """The claims of a live session (valid JWT, not signed out since), whatever the permissions."""
        if not token:
            raise self.tokens.invalid("Missing bearer token; log in at /admin/auth/login.")
        return await self.sessions.check(self.tokens.verify(token))

    async def authorize_admin(self, token: str | None, access: Access, what: str) -> AdminClaims:
        """The claims of a live session allowed by ``access`` (the route policy's entry for ``what``,
        e.g. ``POST /admin/api-keys``): 401 without a live session, 403 ``role_not_allowed``."""
        claims = await self.authenticate_user(token)
        access.check(claims, what)
        return claims

    # Key administration lives in key_admin.py; these names are what routes, CLI and tests call.

    async def issue_key(
        self, tenant_id: str, name: str, scopes: list[str], options: KeyOptions | None = None
    ) -> tuple[ApiKey, str]:
        return await self.key_admin.issue(tenant_id, name, scopes, options)

    async def revoke_key(self, tenant_id: str, key_id: str) -> ApiKey:
        return await self.key_admin.revoke(tenant_id, key_id)

    async def rotate_key(self, tenant_id: str, key_id: str) -> tuple[ApiKey, ApiKey, str]:
        return await self.key_admin.rotate(tenant_id, key_id)
