"""Agent platforms: who may call the ACP routes. A platform's bearer credential is shown once when it
is made; only its SHA-256 digest is stored, so a lookup is one indexed equality. The webhook signing
secret must sign, so it is kept encrypted (admin/crypto.py), and also shown once."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from agent_server.commerce.tables import AgentPlatform
from agent_server.commerce.webhooks import endpoint_for, endpoint_id
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, Conflict, NotFound, ValidationFailed
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.timeutil import iso, utc
from agent_server.storage.db import Database
from agent_server.webhooks.signing import new_secret
from agent_server.webhooks.tables import WebhookRecord
from agent_server.webhooks.url_guard import UrlGuard

CREDENTIAL_PREFIX = "acp_"
# An OAuth access token with this scope may use the ACP tools on /api/mcp.php for its organisation; the
# organisation buys as a platform of its own (``Platforms.for_organisation``).
COMMERCE_SCOPE = "commerce:checkout"
ORGANISATION_PREFIX = "plat_org_"
CREDENTIAL_ONCE = (
    "This is the only time the credential and signing secret are shown; only a digest is stored."
)


def credential_digest(credential: str) -> str:
    return hashlib.sha256(credential.encode()).hexdigest()


@dataclass(frozen=True)
class NewPlatform:
    platform: AgentPlatform
    credential: str
    signing_secret: str


def organisation_platform_id(tenant_id: str) -> str:
    """The id of an organisation's own platform: fixed by the tenant (so its first purchases cannot
    make two), hashed to fit the column whatever the tenant id's length."""
    return ORGANISATION_PREFIX + hashlib.sha256(tenant_id.encode()).hexdigest()[:24]


def platform_view(platform: AgentPlatform) -> dict[str, Any]:
    own = platform.id.startswith(ORGANISATION_PREFIX)
    return {
        "id": platform.id,
        "object": "agent_platform",
        "name": platform.name,
        "credential": f"OAuth tokens ({COMMERCE_SCOPE})"
        if own
        else f"{CREDENTIAL_PREFIX}…{platform.credential_hint}",
        "webhook_url": platform.webhook_url,
        "status": "revoked" if platform.revoked_at else "active",
        "created_at": iso(platform.created_at),
        "revoked_at": iso(platform.revoked_at) if platform.revoked_at else None,
    }


class Platforms:
    def __init__(self, db: Database, clock: Clock, box: SecretBox, guard: UrlGuard) -> None:
        self.db, self.clock, self.box, self.guard = db, clock, box, guard

    async def create(self, name: str, webhook_url: str | None) -> NewPlatform:
        name = name.strip()
        if not 2 <= len(name) <= 200:
            raise ValidationFailed("A platform's name has 2 to 200 characters.", param="name")
        if webhook_url:
            self.guard.parse(webhook_url)  # syntax and scheme now; addresses at each delivery
        credential = CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        signing_secret = new_secret()  # whsec_…: the webhook delivery's own headers decode it too
        platform = AgentPlatform(
            id=f"plat_{secrets.token_hex(8)}",
            name=name,
            credential_digest=credential_digest(credential),
            credential_hint=credential[-4:],
            webhook_url=webhook_url or None,
            signing_secret_encrypted=self.box.encrypt(signing_secret),
            created_at=utc(self.clock.now()),
        )
        try:
            async with self.db.session() as session:
                session.add(platform)
                if platform.webhook_url:  # where its order events go (commerce/webhooks.py)
                    session.add(endpoint_for(platform))
        except IntegrityError:
            raise Conflict(f"A platform named '{name}' exists already.", param="name") from None
        return NewPlatform(platform, credential, signing_secret)

    async def list(self) -> list[AgentPlatform]:
        async with self.db.session() as session:
            rows = await session.execute(select(AgentPlatform).order_by(col(AgentPlatform.created_at)))
            return list(rows.scalars())

    async def get(self, id_or_name: str) -> AgentPlatform:
        async with self.db.session() as session:
            found = await session.get(AgentPlatform, id_or_name)
            if found is None:
                rows = await session.execute(select(AgentPlatform).where(AgentPlatform.name == id_or_name))
                found = rows.scalars().first()
        if found is None:
            raise NotFound(f"No agent platform '{id_or_name}'.", param="platform_id")
        return found

    async def revoke(self, id_or_name: str) -> AgentPlatform:
        platform = await self.get(id_or_name)
        async with self.db.session() as session:
            stored = await session.get(AgentPlatform, platform.id)
            assert stored is not None
            if stored.revoked_at is None:
                stored.revoked_at = utc(self.clock.now())
                session.add(stored)
                hook = await session.get(WebhookRecord, endpoint_id(stored.id))
                if hook is not None:  # no more order events either
                    hook.enabled, hook.disabled_reason = False, "platform revoked"
                    session.add(hook)
            platform = stored
        return platform

    async def set_webhook_url(self, id_or_name: str, webhook_url: str | None) -> AgentPlatform:
        """Send the platform's order events to ``webhook_url`` from now on (pending deliveries too),
        or to nowhere (``None``); its signing secret stays. A revoked platform cannot be changed."""
        if webhook_url:
            self.guard.parse(webhook_url)
        platform = await self.get(id_or_name)
        async with self.db.session() as session:
            stored = await session.get(AgentPlatform, platform.id)
            assert stored is not None
            if stored.revoked_at is not None:
                raise Conflict("This platform is revoked; add a new one.", code="platform_revoked")
            stored.webhook_url = webhook_url or None
            session.add(stored)
            hook = await session.get(WebhookRecord, endpoint_id(stored.id))
            if hook is None and stored.webhook_url:
                session.add(endpoint_for(stored))
            elif hook is not None:
                hook.url = stored.webhook_url or hook.url  # kept for the delivery log's sake
                hook.enabled = stored.webhook_url is not None
                hook.disabled_reason = None if hook.enabled else "no webhook URL"
                session.add(hook)
        return stored

    async def for_organisation(self, tenant_id: str) -> AgentPlatform:
        """The platform an organisation's OAuth callers (``commerce:checkout``) buy as: made at their
        first call, without a webhook and without a usable credential (none is ever shown). Its
        sessions and orders are the organisation's alone; revoking it stops those callers (401)."""
        platform_id = organisation_platform_id(tenant_id)
        async with self.db.session() as session:
            found = await session.get(AgentPlatform, platform_id)
        if found is None:
            found = AgentPlatform(
                id=platform_id,
                name=f"OAuth callers of {tenant_id}",
                credential_digest=credential_digest(secrets.token_urlsafe(32)),  # nobody holds it
                credential_hint="",
                signing_secret_encrypted=self.box.encrypt(new_secret()),
                created_at=utc(self.clock.now()),
            )
            try:
                async with self.db.session() as session:
                    session.add(found)
            except IntegrityError:  # another request of the organisation made it first
                found = await self.get(platform_id)
        if found.revoked_at is not None:
            raise AuthFailed(
                "The platform administrator stopped purchases by this organisation's OAuth tokens.",
                code="invalid_credential",
                param="Authorization",
            )
        return found

    async def authenticate(self, authorization: str | None) -> AgentPlatform:
        """The platform of ``Authorization: Bearer <credential>``; 401 when missing, unknown or revoked."""
        scheme, _, credential = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not credential.strip():
            raise AuthFailed(
                "Send the agent platform's credential as 'Authorization: Bearer <credential>'.",
                code="missing_credential",
                param="Authorization",
            )
        async with self.db.session() as session:
            rows = await session.execute(
                select(AgentPlatform).where(
                    AgentPlatform.credential_digest == credential_digest(credential.strip())
                )
            )
            platform = rows.scalars().first()
        if platform is None or platform.revoked_at is not None:
            raise AuthFailed(
                "Unknown or revoked agent platform credential.",
                code="invalid_credential",
                param="Authorization",
            )
        return platform

    def signing_secret(self, platform: AgentPlatform) -> str:
        return self.box.decrypt(platform.signing_secret_encrypted)
