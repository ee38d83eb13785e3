"""Keys for people an organisation's identity provider asserts (``POST /agent/auth`` with
``identity_type: identity_assertion``; docs/oauth.md).

The assertion is verified (assertion.py); the person is found or created by the single sign-on
rules (agent_server/accounts/sso/provision.py: a verified domain of that organisation, never a
member of another, never a platform administrator, just-in-time with the connection's role); then a
key of the organisation is made for them through the key service the dashboard uses: their role must
be one that manages keys (owner, admin, developer; 403 ``role_not_allowed`` otherwise), its scopes
are the plan's without ``admin``, the plan's key limit applies, and it expires after
``agent_assertion_key_ttl_seconds``. The key's metadata names the person and the agent's
``client_id``, and the organisation's audit log records the issue (``api_key.create``, via
``identity_assertion``).
"""

from __future__ import annotations

from sqlalchemy import select

from agent_server.accounts.roles import BUILDERS, ROLES
from agent_server.accounts.service import Accounts
from agent_server.accounts.sso.provision import provision
from agent_server.accounts.sso.service import sso_of
from agent_server.admin.wiring import admin_services
from agent_server.agent_auth.assertion import Assertion, IdJagVerifier
from agent_server.agent_auth.issued import IssuedKey
from agent_server.foundation.errors import PermissionDenied
from agent_server.foundation.timeutil import utc
from agent_server.gateway.key_settings import KeyOptions
from agent_server.gateway.tables import Tenant, User

EXTRAS_KEY = "agent_auth.asserted"
AGENT_SCOPES = frozenset({"chat", "embeddings", "files", "models"})  # never admin


class AssertedKeys:
    def __init__(self, accounts: Accounts) -> None:
        self.accounts, self.gateway = accounts, accounts.gateway
        sso, settings = sso_of(accounts), accounts.settings
        self.verifier = IdJagVerifier(
            accounts.db,
            accounts.clock,
            sso.directory,
            self.gateway.catalog,
            settings.public_base_url.rstrip("/"),
        )
        self.ttl = settings.agent_assertion_key_ttl_seconds

    async def person(self, assertion: str) -> tuple[Assertion, User]:
        """The verified assertion and its person, provisioned by the single sign-on rules, whose role
        may use the gateway; also the JWT-bearer grant's check (agent_server/oauth/id_jag_grant.py)."""
        accounts = self.accounts
        verified = await self.verifier.verify(assertion)
        user = await provision(accounts.db, accounts.clock.now(), verified.connection, verified.email)
        if user.role not in BUILDERS.roles:
            allowed = ", ".join(role for role in ROLES if role in BUILDERS.roles)
            raise PermissionDenied(
                f"An agent acting for {user.email} needs them to hold one of the roles {allowed}; "
                f"{'their role is ' + user.role if user.role else 'they have no role'} in the organisation.",
                code="role_not_allowed",
            )
        return verified, user

    async def issue(self, assertion: str, ip: str) -> IssuedKey:
        accounts = self.accounts
        await accounts.limiter.enforce(accounts.anonymous.per_ip, ip)  # one budget per IP for both types
        verified, user = await self.person(assertion)
        now = accounts.clock.now()
        expires = utc(now + self.ttl)
        metadata = {
            "agent_client_id": verified.client_id[:200],
            "user_id": user.id,
            "subject": verified.subject[:200],
        }
        record, full = await self.gateway.key_admin.issue(
            verified.connection.tenant_id,
            f"agent for {user.email}"[:200],
            sorted(await self._scopes(verified.connection.tenant_id)),
            KeyOptions(expires_at=expires, metadata=metadata),
        )
        await admin_services(accounts.services).audit.record(  # the organisation sees who got a key
            actor=user.id,
            tenant_id=record.tenant_id,
            action="api_key.create",
            target=record.id,
            ip=ip,
            details={"via": "identity_assertion", "scopes": list(record.scopes), **metadata},
        )
        return IssuedKey(full, expires, list(record.scopes), record.id, record.tenant_id)

    async def _scopes(self, tenant_id: str) -> set[str]:
        """What the plan allows an organisation's keys, but admin."""
        async with self.accounts.db.session() as session:
            plan_id = await session.scalar(select(Tenant.plan_id).where(Tenant.id == tenant_id))
        return set(self.gateway.catalog.get(plan_id).scopes & AGENT_SCOPES)


def asserted_keys_of(accounts: Accounts) -> AssertedKeys:
    """The app's ``AssertedKeys``, made once (it shares the single sign-on services' caches)."""
    extras = accounts.services.extras
    if EXTRAS_KEY not in extras:
        extras[EXTRAS_KEY] = AssertedKeys(accounts)
    return extras[EXTRAS_KEY]
