"""The gateway facade: what the HTTP routes and the CLI call. Built once per app by ``create_app``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import NamedTuple, TypeVar

from agent_server.accounts.sessions import Sessions, SignedIn
from agent_server.accounts.sso.enforcement import is_enforced
from agent_server.errors import AuthFailed, PermissionDenied, RateLimited, ValidationFailed
from agent_server.events import KeyRotated
from agent_server.gateway import repository as repo
from agent_server.gateway.auth import KeyAuthenticator, KeyPrincipal
from agent_server.gateway.bootstrap import bootstrap
from agent_server.gateway.passwords import hash_password, needs_rehash, verify_password
from agent_server.gateway.plans import PlanCatalog, check_scopes, seed_plans
from agent_server.gateway.quota import QuotaGate
from agent_server.gateway.ratelimit import RateLimiter
from agent_server.gateway.tables import ApiKey, User
from agent_server.gateway.tokens import AdminClaims, TokenService, bearer_challenge, signing_secret
from agent_server.gateway.usage import UsageRow, UsageWriter
from agent_server.llm.types import LLMBackend
from agent_server.services import Services
from agent_server.storage.kv import RedisKV
from agent_server.tasks import stop_tasks
from agent_server.versions import CURRENT_VERSION

log = logging.getLogger("agentgate.gateway")
T = TypeVar("T")
ADMIN_PERMISSIONS = frozenset({"tenant:admin", "platform:admin"})
LOGIN_FAILURES = 10  # per e-mail address and window, then 429
LOGIN_WINDOW = 900.0


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
        self.catalog = PlanCatalog()
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
        )
        self.limiter = RateLimiter(services.kv, services.clock, settings.rate_limit_window_seconds)
        # With Redis, usage rows are durable before the response (a Redis list drained in batches).
        usage_log = services.kv if isinstance(services.kv, RedisKV) else None
        self.usage = UsageWriter(services.db, log=usage_log)
        self.quota = QuotaGate(services.db, services.clock)
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
        await self.catalog.load(self.db, pack.models)
        await bootstrap(self.services)
        await self.usage.start()
        # Scans at once, then every few seconds (a failing database only delays it).
        every = self.services.settings.quota_check_seconds
        self._tasks.append(asyncio.create_task(self.quota.run(every), name="token-quota"))

    async def stop(self) -> None:
        await stop_tasks(self._tasks)
        await self.usage.stop()
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
        return Caller(principal, headers, started)

    def entitle(
        self, caller: Caller, model: str, *, stream: bool = False, feature: str | None = None
    ) -> None:
        """What the plan and the key allow for this request, checked after the body is read: the
        model, the monthly quota, streaming and an endpoint's feature. Every /v1 endpoint calls it,
        so a rule added here holds on all of them."""
        principal = caller.principal
        self.catalog.check_model(principal.plan, model)
        self.quota.check(principal)
        if stream:
            self.catalog.check_feature(principal.plan, "streaming")
        if feature is not None:
            self.catalog.check_feature(principal.plan, feature)

    def llm_for(self, principal: KeyPrincipal) -> LLMBackend:
        """Sandbox keys always get the deterministic mock; live keys get the router."""
        return self.services.sandbox_llm if principal.environment == "test" else self.services.llm

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
    ) -> None:
        """Queue the request's usage row; ``api_version`` is the version the client pinned, if any."""
        principal = caller.principal
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
                None,  # row_token, set by the writer; positional: keywords cost a NamedTuple ~90 ns
                api_version or self.current_version,
            )
        )

    # -- administration --------------------------------------------------------------------------

    async def login(self, email: str, password: str) -> SignedIn:
        """A session for e-mail and password. Every failure looks the same and costs one argon2 verify."""
        counter = f"login-fail:{email.strip().lower()}"
        failures = await self._kv_call(self.services.kv.get(counter))
        if failures is not None and int(failures) >= LOGIN_FAILURES:
            raise RateLimited("Too many failed logins; try again later.", retry_after=int(LOGIN_WINDOW))
        user = await repo.find_user(self.db, email)
        if not await verify_password(user.password_hash if user else None, password) or user is None:
            await self._kv_call(self.services.kv.incr(counter, ttl=LOGIN_WINDOW))
            raise AuthFailed(
                "Wrong e-mail or password.", code="invalid_credentials", headers=self.tokens.challenge
            )
        await self._kv_call(self.services.kv.delete(counter))
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
        if "platform:admin" in user.permissions:
            return
        if not await is_enforced(self.db, user.tenant_id, self.catalog):  # the flag, on a plan with sso
            return
        raise PermissionDenied(
            "Your organisation signs in through its identity provider; use single sign-on "
            "(POST /sso/discover with your e-mail address).",
            code="sso_required",
        )

    @staticmethod
    async def _kv_call(call: Awaitable[T]) -> T | None:
        """The login throttle's KV call; if the KV is down, logins still work (passwords are checked)."""
        try:
            return await call
        except Exception:
            log.warning("login throttle unavailable: the KV failed", exc_info=True)
            return None

    async def authenticate_user(self, token: str | None) -> AdminClaims:
        """The claims of a live session (valid JWT, not signed out since), whatever the permissions."""
        if not token:
            raise self.tokens.invalid("Missing bearer token; log in at /admin/auth/login.")
        claims = self.tokens.verify(token)
        await self.sessions.check(claims)
        return claims

    async def authorize_admin(self, token: str | None) -> AdminClaims:
        claims = await self.authenticate_user(token)
        if not claims.permissions & ADMIN_PERMISSIONS:
            raise PermissionDenied("This user is not an administrator of the tenant.")
        return claims

    async def issue_key(self, tenant_id: str, name: str, scopes: list[str]) -> tuple[ApiKey, str]:
        tenant = await repo.find_tenant(self.db, tenant_id)
        if tenant is None:
            raise ValidationFailed(f"Unknown tenant '{tenant_id}'.", param="tenant")
        wanted = check_scopes(self.catalog.get(tenant.plan_id), scopes)
        record, full = repo.new_key(self.clock.now(), tenant.id, name, wanted, self.environment)
        await repo.add_key(self.db, record)
        return record, full

    async def revoke_key(self, tenant_id: str, key_id: str) -> ApiKey:
        record = await repo.revoke_key(self.db, self.clock.now(), tenant_id, key_id)
        self.keys.invalidate(record.digest)
        return record

    async def rotate_key(self, tenant_id: str, key_id: str) -> tuple[ApiKey, ApiKey, str]:
        now = self.clock.now()
        old, new, full = await repo.rotate_key(self.db, now, tenant_id, key_id)
        self.keys.invalidate(old.digest)
        await self.services.events.publish(
            KeyRotated(
                tenant_id=tenant_id, occurred_at=now, old_key_id=old.id, new_key_id=new.id, name=new.name
            )
        )
        return old, new, full
