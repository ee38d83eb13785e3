"""SAML 2.0 single sign-on per tenant: the service provider a tenant admin connects to their IdP.

Flow (docs/accounts.md, "SAML"): ``start`` sends the browser to the IdP with an AuthnRequest
(HTTP-Redirect) and remembers its id in the KV for ``sso_state_ttl_seconds``; the IdP posts a
SAMLResponse to ``finish`` (our ACS), which takes that id from the KV (once: a replayed or unsolicited
response finds nothing), has the response checked, and provisions the asserted user.

pysaml2 costs about 22 MB and half a second to import, and checks signatures with signxml
(``saml_crypto``): its modules (``saml_client``, ``saml_metadata``, ``saml_response``) are imported
on first use and every call into them runs in a worker thread, off the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.sso.connections import ASSIGNABLE_PERMISSIONS
from agent_server.accounts.sso.enforcement import keep_enforceable, require_sso_plan
from agent_server.accounts.sso.provision import DEFAULT_PERMISSIONS, connection, provision
from agent_server.accounts.tables import SsoConnection
from agent_server.foundation.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway.tables import Tenant, User
from agent_server.policies.ratelimit import Policy

if TYPE_CHECKING:
    from agent_server.accounts.service import Accounts

PROTOCOL = "saml"
RELAY_STATE_MAX = 80  # bytes, SAML bindings 3.4.3 and 3.5.3
# Each start stores a pending request for sso_state_ttl_seconds; this bounds what one address can
# store (and the signature checks at the ACS). Generous, since a whole office may share one address.
STARTS_PER_IP = Policy("saml-start-ip", 300, 600)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SpEndpoints:
    """Our service provider for one tenant: what its IdP is told about us."""

    entity_id: str
    acs_url: str

    @classmethod
    def of(cls, public_base_url: str, tenant_id: str) -> SpEndpoints:
        base = f"{public_base_url.rstrip('/')}/sso/saml/{tenant_id}"
        return cls(entity_id=f"{base}/metadata", acs_url=f"{base}/acs")

    def view(self) -> dict[str, str]:
        # The entity id is also where our metadata is served.
        return {"entity_id": self.entity_id, "acs_url": self.acs_url, "metadata_url": self.entity_id}


async def _blocking(call: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(call, *args)


class SamlSignIn:
    def __init__(self, accounts: Accounts) -> None:
        self.settings, self.db, self.kv = accounts.settings, accounts.db, accounts.kv
        self.clock, self.limiter = accounts.clock, accounts.limiter
        self.catalog = accounts.gateway.catalog  # single sign-on is a plan feature (plans.yaml)

    def endpoints(self, tenant_id: str) -> SpEndpoints:
        return SpEndpoints.of(self.settings.public_base_url, tenant_id)

    # -- configuration (tenant admin) --------------------------------------------------------------

    async def view(self, tenant_id: str) -> dict[str, Any]:
        """The stored connection (or ``configured: false``) and what the IdP needs from us."""
        conn = await connection(self.db, tenant_id, PROTOCOL)
        if conn is None:
            return self._view(tenant_id, None, {})
        from agent_server.accounts.sso.saml_metadata import read_idp_metadata

        try:
            idp = (await _blocking(read_idp_metadata, conn.config["idp_metadata_xml"])).view()
        except ValidationFailed as exc:  # valid when saved, expired since: say so, do not fail the read
            idp = {"entity_id": conn.config["idp_entity_id"], "problem": exc.message}
        return self._view(tenant_id, conn, idp)

    def _view(self, tenant_id: str, conn: SsoConnection | None, idp: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"object": "saml_connection", "configured": conn is not None}
        body["service_provider"] = self.endpoints(tenant_id).view()
        if conn is not None:
            body |= {
                "id": conn.id,
                "enabled": conn.enabled,
                "jit_permissions": list(conn.config.get("jit_permissions", DEFAULT_PERMISSIONS)),
                "idp": idp,
                "idp_metadata_xml": conn.config["idp_metadata_xml"],
                "created_at": iso(conn.created_at),
                "updated_at": iso(conn.updated_at),
            }
        return body

    async def save(
        self, tenant_id: str, idp_metadata_xml: str, *, enabled: bool, jit_permissions: list[str]
    ) -> dict[str, Any]:
        """Check the IdP metadata (400 naming what is wrong) and store it as the tenant's connection."""
        unknown = sorted(set(jit_permissions) - ASSIGNABLE_PERMISSIONS)
        if unknown:
            raise ValidationFailed(
                f"New SSO users can be given only {sorted(ASSIGNABLE_PERMISSIONS)}, not {unknown}.",
                code="invalid_permissions",
                param="jit_permissions",
            )
        from agent_server.accounts.sso.saml_metadata import read_idp_metadata

        idp = await _blocking(read_idp_metadata, idp_metadata_xml)
        config = {
            "idp_metadata_xml": idp_metadata_xml,
            "idp_entity_id": idp.entity_id,
            "jit_permissions": sorted(set(jit_permissions)),
        }
        now = utc(self.clock.now())
        try:
            async with self.db.session() as session:
                conn = await self._row(session, tenant_id)
                if conn is None:
                    conn = SsoConnection(
                        id=new_id("sso_"), tenant_id=tenant_id, protocol=PROTOCOL, config=config,
                        created_at=now, updated_at=now,
                    )  # fmt: skip
                    session.add(conn)
                conn.config, conn.enabled, conn.updated_at = config, enabled, now
                if not enabled:
                    await keep_enforceable(session, tenant_id, "turning the SAML connection off")
                await session.flush()
        except IntegrityError:  # two first saves at once: the other one won
            raise Conflict(
                "The SAML connection was saved at this moment by another request; retry."
            ) from None
        return self._view(tenant_id, conn, idp.view())

    async def remove(self, tenant_id: str) -> None:
        async with self.db.session() as session:
            conn = await self._row(session, tenant_id)
            if conn is None:
                raise NotFound("This organisation has no SAML connection.", code="sso_not_configured")
            await session.delete(conn)
            await keep_enforceable(session, tenant_id, "deleting the SAML connection")

    @staticmethod
    async def _row(session: AsyncSession, tenant_id: str) -> SsoConnection | None:
        query = select(SsoConnection).where(
            SsoConnection.tenant_id == tenant_id, SsoConnection.protocol == PROTOCOL
        )
        return (await session.execute(query)).scalars().first()

    # -- the service provider (public) -----------------------------------------------------------

    async def sp_metadata(self, tenant_id: str) -> str:
        """Served before the IdP is configured too: many IdPs want ours first."""
        async with self.db.session() as session:
            if await session.get(Tenant, tenant_id) is None:
                raise NotFound("No organisation has this id.", code="tenant_not_found")
        from agent_server.accounts.sso.saml_metadata import sp_metadata_xml

        return await _blocking(sp_metadata_xml, self.endpoints(tenant_id))

    async def start(self, tenant_id: str, relay_state: str, ip: str) -> str:
        """The IdP URL to send the browser to; its AuthnRequest id waits in the KV for the response."""
        if len(relay_state.encode()) > RELAY_STATE_MAX:
            raise ValidationFailed(
                f"relay_state may have at most {RELAY_STATE_MAX} bytes.", param="relay_state"
            )
        conn = await self._enabled(tenant_id)
        await self.limiter.enforce(STARTS_PER_IP, ip)
        from agent_server.accounts.sso.saml_client import authn_request

        request_id, url = await _blocking(
            authn_request,
            self.endpoints(tenant_id),
            conn.config["idp_metadata_xml"],
            conn.config["idp_entity_id"],
            relay_state,
        )
        pending = json.dumps({"relay_state": relay_state}).encode()
        await self.kv.set(
            self._pending_key(tenant_id, request_id), pending, ttl=self.settings.sso_state_ttl_seconds
        )
        return url

    async def finish(self, tenant_id: str, saml_response: str, relay_state: str) -> tuple[User, str]:
        """The user the IdP signed in (created on first sign-in) and the relay state of the request."""
        conn = await self._enabled(tenant_id)
        from agent_server.accounts.sso.saml_response import asserted_email, refused, request_id_of

        request_id = request_id_of(saml_response)
        pending = await self.kv.take(self._pending_key(tenant_id, request_id))
        if pending is None:
            raise refused(
                "the response answers no pending request of this organisation (already used, expired "
                f"after {self.settings.sso_state_ttl_seconds} s, or never sent).",
                "saml_unsolicited",
            )
        expected_relay_state = json.loads(pending)["relay_state"]
        if relay_state != expected_relay_state:
            raise refused("RelayState is not the one sent with the request.", "saml_relay_state")
        email = await _blocking(
            asserted_email,
            self.endpoints(tenant_id),
            conn.config["idp_metadata_xml"],
            conn.config["idp_entity_id"],
            saml_response,
            request_id,
        )
        return await provision(self.db, self.clock.now(), conn, email), expected_relay_state

    async def _enabled(self, tenant_id: str) -> SsoConnection:
        """The tenant's SAML connection, at start and at the ACS: 404 when none, 403 when turned off or
        when the tenant's plan lacks sso."""
        conn = await connection(self.db, tenant_id, PROTOCOL)
        if conn is None:
            raise NotFound("This organisation has no SAML sign-in configured.", code="sso_not_configured")
        if not conn.enabled:
            raise PermissionDenied("This organisation's SAML sign-in is turned off.", code="sso_disabled")
        await require_sso_plan(self.db, tenant_id, self.catalog)
        return conn

    @staticmethod
    def _pending_key(tenant_id: str, request_id: str) -> str:
        return f"saml-request:{tenant_id}:{request_id}"
