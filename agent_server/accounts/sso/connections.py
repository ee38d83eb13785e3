"""A tenant's SSO connections as its admin sees and changes them; the OIDC one is saved here.

Saving an OIDC connection fetches the issuer's discovery document first: a typo in the issuer, a
provider that is down or one that names another issuer is a 400 at save time, not a failed sign-in
later. The client secret is stored encrypted (SecretBox) and never shown again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.sso.enforcement import keep_enforceable
from agent_server.accounts.sso.oidc_metadata import ENDPOINTS, IssuerDirectory
from agent_server.accounts.sso.outbound import ProviderUnreachable
from agent_server.accounts.tables import SsoConnection
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.timeutil import iso, utc
from agent_server.storage.db import Database

ASSIGNABLE_PERMISSIONS = frozenset({"tenant:admin"})  # never platform:admin: a tenant cannot grant it
DEFAULT_SCOPES = ("openid", "email", "profile")


@dataclass(frozen=True, slots=True)
class OidcSettings:
    """What a tenant admin sets for its OpenID provider (PUT /admin/sso/oidc)."""

    issuer: str
    client_id: str
    client_secret: str | None  # None: keep the stored one (same issuer and client only)
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    enabled: bool = True
    jit_permissions: tuple[str, ...] = ("tenant:admin",)

    def checked(self) -> OidcSettings:
        if "openid" not in self.scopes:
            raise ValidationFailed("The scopes must include openid.", code="invalid_scopes", param="scopes")
        unknown = sorted(set(self.jit_permissions) - ASSIGNABLE_PERMISSIONS)
        if unknown:
            raise ValidationFailed(
                f"New SSO users can be given only {sorted(ASSIGNABLE_PERMISSIONS)}, not {unknown}.",
                code="invalid_permissions",
                param="jit_permissions",
            )
        return self


def connection_view(conn: SsoConnection) -> dict[str, Any]:
    """A connection without its secret (nor the SAML IdP's metadata XML: GET /admin/sso/saml has it)."""
    return {
        "id": conn.id,
        "protocol": conn.protocol,
        "enabled": conn.enabled,
        "config": {key: value for key, value in conn.config.items() if not key.endswith("_xml")},
        "created_at": iso(conn.created_at),
        "updated_at": iso(conn.updated_at),
    }


class Connections:
    def __init__(self, db: Database, clock: Clock, box: SecretBox, directory: IssuerDirectory) -> None:
        self.db, self.clock, self.box, self.directory = db, clock, box, directory

    async def of_tenant(self, tenant_id: str) -> list[SsoConnection]:
        query = (
            select(SsoConnection).where(SsoConnection.tenant_id == tenant_id).order_by(SsoConnection.protocol)
        )
        async with self.db.session() as session:
            return list((await session.execute(query)).scalars())

    async def save_oidc(self, tenant_id: str, wanted: OidcSettings) -> SsoConnection:
        wanted = wanted.checked()
        try:
            metadata = await self.directory.metadata(wanted.issuer, fresh=True)
        except ProviderUnreachable as exc:
            raise ValidationFailed(exc.message, code="sso_issuer_invalid", param="issuer") from None
        # The issuer passed the outbound guard when its document was fetched; the endpoints it names
        # are resolved and checked now too (docs/accounts.md), so none on an internal address is saved.
        for field, url in metadata.endpoints().items():
            await self.directory.http.check_target(url, ENDPOINTS[field], field)
        config = {
            "issuer": wanted.issuer,
            "client_id": wanted.client_id,
            "scopes": list(dict.fromkeys(wanted.scopes)),
            "jit_permissions": sorted(set(wanted.jit_permissions)),
        }
        now = utc(self.clock.now())
        try:
            async with self.db.session() as session:
                query = select(SsoConnection).where(
                    SsoConnection.tenant_id == tenant_id, SsoConnection.protocol == "oidc"
                )
                conn = (await session.execute(query)).scalars().first()
                if conn is None:
                    conn = SsoConnection(
                        id=new_id("sso_"),
                        tenant_id=tenant_id,
                        protocol="oidc",
                        config={},
                        created_at=now,
                        updated_at=now,
                    )
                    session.add(conn)
                conn.secret = self._secret(conn, wanted)
                conn.config, conn.enabled, conn.updated_at = config, wanted.enabled, now
                if not wanted.enabled:
                    await keep_enforceable(session, tenant_id, "disabling the OIDC connection")
                await session.flush()
        except IntegrityError:  # two saves of a first connection at once
            raise Conflict(
                "The OIDC connection was saved at this moment by another request; try again."
            ) from None
        return conn

    def _secret(self, conn: SsoConnection, wanted: OidcSettings) -> str:
        """The encrypted client secret to store. Keeping the stored one needs the same provider and
        client: the secret goes to the provider's token endpoint, so a new issuer must not get it."""
        if wanted.client_secret is not None:
            return self.box.encrypt(wanted.client_secret)
        same = (conn.config.get("issuer"), conn.config.get("client_id")) == (wanted.issuer, wanted.client_id)
        if conn.secret is None or not same:
            raise ValidationFailed(
                "Send the client secret: it is kept only for the same issuer and client id.",
                param="client_secret",
            )
        return conn.secret

    async def set_enabled(self, tenant_id: str, protocol: str, enabled: bool) -> SsoConnection:
        """Turn a connection on or off, keeping its settings; the last one stays on while enforced."""
        async with self.db.session() as session:
            conn = await self._row(session, tenant_id, protocol)
            conn.enabled, conn.updated_at = enabled, utc(self.clock.now())
            if not enabled:
                await keep_enforceable(session, tenant_id, f"disabling the {protocol.upper()} connection")
        return conn

    @staticmethod
    async def _row(session: AsyncSession, tenant_id: str, protocol: str) -> SsoConnection:
        query = select(SsoConnection).where(
            SsoConnection.tenant_id == tenant_id, SsoConnection.protocol == protocol
        )
        conn = (await session.execute(query)).scalars().first()
        if conn is None:
            raise NotFound(f"This organisation has no {protocol.upper()} connection.", param="protocol")
        return conn

    async def delete(self, tenant_id: str, protocol: str) -> None:
        async with self.db.session() as session:
            await session.delete(await self._row(session, tenant_id, protocol))
            await keep_enforceable(session, tenant_id, f"deleting the {protocol.upper()} connection")
