"""The accounts layer of an app, built once by ``create_app``: what the account routes call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent_server.accounts.credentials import Credentials
from agent_server.accounts.invitations import Invitations
from agent_server.accounts.members import Members
from agent_server.accounts.passkeys import Passkeys
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.accounts.registration import Registrations
from agent_server.agent_auth.anonymous import AnonymousKeys
from agent_server.billing.engine import STANDING_GATE
from agent_server.capabilities.services import Services
from agent_server.foundation.secret_box import SecretBox
from agent_server.gateway.plans import anonymous_plan
from agent_server.gateway.service import Gateway
from agent_server.mail.service import Mailer
from agent_server.policies.ratelimit import Limiter


class Accounts:
    def __init__(self, services: Services, gateway: Gateway) -> None:
        settings = services.settings
        self.services, self.gateway, self.settings = services, gateway, settings
        self.db, self.clock, self.kv = services.db, services.clock, services.kv
        self.sessions = gateway.sessions
        self.box = SecretBox.from_settings(settings)
        self.policy = PasswordPolicy(settings, lambda: services.http)  # the client at its first use
        self.limiter = Limiter(services.kv, services.clock, prefix="rl-accounts")
        self.mailer = Mailer(settings, services.db, self.box, services.clock)
        name = services.knowledge.pack.company.name
        self.passkeys = Passkeys(settings, self.db, self.kv, self.clock, name)
        self.registrations = Registrations(
            settings, self.db, self.clock, self.mailer, self.policy, self.limiter, self.sessions, name
        )
        self.credentials = Credentials(
            settings, self.db, self.clock, self.mailer, self.policy, self.limiter, gateway, name
        )
        self.registrations.passkeys = self.passkeys  # registration may start with a passkey
        self.members = Members(self.db, self.clock)
        self.anonymous = AnonymousKeys(
            settings,
            self.db,
            self.clock,
            self.limiter,
            self.mailer,
            anonymous_plan(services.knowledge.pack.plans),
            name,
            self._refresh_standing,
        )
        self.invitations = Invitations(
            settings,
            self.db,
            self.clock,
            self.mailer,
            self.policy,
            self.limiter,
            self.sessions,
            gateway.catalog,
            name,
        )

    async def _refresh_standing(self, tenant_id: str) -> None:
        """Have this process's billing gate read the tenant again (a trial that just got longer)."""
        gate = self.services.extras.get(STANDING_GATE)
        if gate is not None:
            await gate.refresh(tenant_id)

    @property
    def sign_in_methods(self) -> list[str]:
        """How users sign in here: what GET /register advertises."""
        passkey = ["passkey"] if self.registrations.passkeys is not None else []
        return ["password", *passkey, "sso"]  # sso: POST /sso/discover, then the tenant's provider

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Accounts]:
        async with self.mailer.running():
            yield self
