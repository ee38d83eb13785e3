"""Anonymous agents' keys (``POST /agent/auth`` with ``identity_type: anonymous``; docs/oauth.md).

An agent names an e-mail address and gets a key at once, on the plan of anonymous agents
(``plans.yaml`` ``anonymous_agents``, the Free plan): its scopes, models and limits, valid for the
plan's ``trial_days``. The keys of one address live in a tenant of their own (``anonymous_identities``
maps the address's digest to it), so the plan's token quota and key limit (``max_keys``: the cap of
live keys per address) hold per address. The tenant's trial ends with its newest key; an address
that comes back after that gets a fresh tenant, so no process can still hold the old one's refusal.

Abuse limits: issues per client IP per hour and per address per day (settings), invalid and
disposable addresses refused (addresses.py). A notice goes to the address with each key, in the
transaction that makes it, saying how the owner keeps the keys: by registering (claims.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import links, messages
from agent_server.agent_auth.addresses import checked_address, digest
from agent_server.agent_auth.issued import IssuedKey
from agent_server.agent_auth.tables import AnonymousIdentity
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import PermissionDenied
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import PlanRecord, Tenant, unix
from agent_server.knowledge.pack import Plan
from agent_server.mail.outbox import enqueue
from agent_server.mail.service import Mailer
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.db import Database

HOUR, DAY = 3600, 86_400
FRESH_TENANT_WITHIN = HOUR  # a tenant whose trial ends sooner is replaced rather than extended
KEY_NAME = "anonymous agent"


class AnonymousKeys:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        clock: Clock,
        limiter: Limiter,
        mailer: Mailer,
        plan: Plan | None,
        service_name: str,
        refresh_standing: Callable[[str], Any],
    ) -> None:
        self.settings, self.db, self.clock, self.limiter, self.mailer = settings, db, clock, limiter, mailer
        self.plan, self.service_name, self.refresh_standing = plan, service_name, refresh_standing
        self.environment = "test" if settings.sandbox else "live"
        self.per_ip = Policy("agent-auth-ip", settings.agent_auth_limit_per_ip, HOUR)
        self.per_email = Policy("agent-auth-email", settings.agent_auth_limit_per_email, DAY)

    @property
    def lifetime(self) -> int:
        """Seconds an anonymous key works: the plan's trial_days."""
        return (self.plan.trial_days if self.plan else 0) * DAY

    async def issue(self, raw_email: str, ip: str) -> IssuedKey:
        if self.plan is None:
            raise PermissionDenied(
                "This deployment offers no plan for anonymous agents; register at /register instead.",
                code="anonymous_not_offered",
            )
        await self.limiter.enforce(self.per_ip, ip)
        email = checked_address(raw_email)
        key_of_address = digest(email)
        await self.limiter.enforce(self.per_email, key_of_address)
        now = self.clock.now()
        expires = utc(now + self.lifetime)
        for last_try in (False, True):  # a first key of an address asked twice at once: one tenant wins
            try:
                async with self.db.session() as session:
                    tenant = await self._tenant(session, key_of_address, now, expires)
                    record, full = repo.new_key(
                        now,
                        tenant.id,
                        KEY_NAME,
                        list(self.plan.scopes),
                        self.environment,
                        {"expires_at": expires},
                    )
                    await repo.insert_key(session, record, self._cap)
                    mail = messages.anonymous_key(
                        email,
                        self.service_name,
                        expires.strftime("%Y-%m-%d %H:%M UTC"),
                        f"{self.settings.app_base_url}{links.REGISTER_PAGE}",
                    )
                    enqueue(session, self.mailer.box, mail, now)
                break
            except IntegrityError:
                if last_try:
                    raise
        self.mailer.wake()
        await self.refresh_standing(tenant.id)  # this process serves the key at once
        return IssuedKey(full, expires, sorted(record.scopes), record.id, tenant.id)

    async def _tenant(
        self, session: AsyncSession, key_of_address: str, now: float, expires: datetime
    ) -> Tenant:
        """The address's tenant, its trial reaching the new key's expiry; a new one when it has none,
        or when its trial ends within the hour (every process then meets a tenant it never refused)."""
        assert self.plan is not None
        identity = await session.get(AnonymousIdentity, key_of_address)
        tenant = await session.get(Tenant, identity.tenant_id) if identity is not None else None
        if tenant is not None and unix(tenant.trial_ends_at) > now + FRESH_TENANT_WITHIN:
            tenant.trial_ends_at = max(tenant.trial_ends_at, expires)
            return tenant
        plan = await session.get(PlanRecord, self.plan.id)
        assert plan is not None  # seeded from the content pack at start
        tenant = repo.new_tenant(now, "", plan)
        tenant.name, tenant.trial_ends_at = f"Anonymous agent {tenant.id}", expires
        session.add(tenant)
        await session.flush()
        if identity is None:
            session.add(
                AnonymousIdentity(email_digest=key_of_address, tenant_id=tenant.id, created_at=utc(now))
            )
        else:
            identity.tenant_id = tenant.id
        await session.flush()
        return tenant

    def _cap(self, live: int) -> None:
        assert self.plan is not None
        limit = self.plan.max_keys
        if limit is not None and live >= limit:
            days = self.lifetime // DAY
            raise PermissionDenied(
                f"This address holds {live} live anonymous keys, the most it may. Use one of them, wait "
                f"until one expires (they live {days} days), or register at /register with this address: "
                "its keys then join your organisation.",
                code="anonymous_key_limit",
                param="email",
            )
