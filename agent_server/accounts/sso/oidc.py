"""OpenID Connect sign-in: authorization code flow with PKCE (S256), one redirect URI for every tenant.

``start`` keeps the state's secrets (nonce, PKCE verifier, which tenant and connection) server-side
in the KV under the SHA-256 of the state, for ``sso_state_ttl_seconds``; ``finish`` takes them out in
one step (KV.take), so a state works once. The state is also bound to the browser that started the
sign-in (a random value in an HttpOnly cookie, its digest kept with the state; RFC 9700, 4.7.1), so
a callback URL that leaks (logs, Referer) cannot be redeemed in another browser. ``finish`` then
exchanges the code at the token endpoint (client_secret_basic, or _post when the provider offers
only that), validates the ID token and signs the user in, creating them in the tenant on first
sign-in (provision.py).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import asdict, dataclass

from agent_server.accounts.sessions import Sessions, SignedIn
from agent_server.accounts.sso.enforcement import require_sso_plan
from agent_server.accounts.sso.id_token import IdTokenValidator, refused
from agent_server.accounts.sso.oidc_metadata import IssuerDirectory, ProviderMetadata
from agent_server.accounts.sso.outbound import ProviderHttp
from agent_server.accounts.sso.provision import connection, provision
from agent_server.accounts.tables import SsoConnection
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, NotFound, PermissionDenied, ValidationFailed
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.settings import Settings
from agent_server.gateway.plans import PlanCatalog
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.db import Database
from agent_server.storage.kv import KV

# Authlib loads at the first OpenID sign-in, not in every worker (docs/performance.md, "Memory").
oauth2_auth = lazy_module("authlib.oauth2.auth")
grants = lazy_module("authlib.oauth2.rfc6749.parameters")
pkce = lazy_module("authlib.oauth2.rfc7636")

STATE_PREFIX = "sso-oidc-state:"
CALLBACK_PATH = "/sso/oidc/callback"
BROWSER_COOKIE = "agentgate_sso_oidc"
# Each start keeps a pending sign-in for sso_state_ttl_seconds: this bounds what one address can
# store. Generous, since a whole office may share one address.
STARTS_PER_IP = Policy("oidc-start-ip", 300, 600, fail_open=True)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def state_key(state: str) -> str:
    return STATE_PREFIX + digest(state)


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    tenant_id: str
    connection_id: str
    issuer: str
    nonce: str
    code_verifier: str
    browser: str  # SHA-256 of the browser binding (the cookie's value)


@dataclass(frozen=True, slots=True)
class Started:
    """Where to send the browser, and the value of the cookie that binds this sign-in to it."""

    authorization_url: str
    browser_binding: str


def state_refused() -> ValidationFailed:
    return ValidationFailed(
        "This sign-in is unknown, expired or already used; start it again.",
        code="sso_state_invalid",
        param="state",
    )


def provider_refused(error: str, description: str | None) -> PermissionDenied | ValidationFailed:
    said = f" ({description[:300]})" if description else ""
    if error == "access_denied":
        return PermissionDenied(
            f"The sign-in was cancelled or refused at the identity provider{said}.", code="sso_access_denied"
        )
    return ValidationFailed(
        f"The identity provider answered the sign-in with the error {error[:100]}{said}.",
        code="sso_provider_error",
        param="error",
    )


class OidcSignIn:
    def __init__(
        self,
        *,
        settings: Settings,
        db: Database,
        kv: KV,
        clock: Clock,
        box: SecretBox,
        sessions: Sessions,
        limiter: Limiter,
        http: ProviderHttp,
        directory: IssuerDirectory,
        id_tokens: IdTokenValidator,
        catalog: PlanCatalog,
    ) -> None:
        self.db, self.kv, self.clock, self.box, self.sessions = db, kv, clock, box, sessions
        self.catalog = catalog  # single sign-on is a plan feature, checked at every start and finish
        self.limiter = limiter
        self.http, self.directory, self.id_tokens = http, directory, id_tokens
        self.state_ttl = settings.sso_state_ttl_seconds
        self.redirect_uri = settings.public_base_url.rstrip("/") + CALLBACK_PATH

    async def enabled_connection(self, tenant_id: str) -> SsoConnection:
        """The tenant's OIDC connection: 404 when none is enabled, 403 when its plan lacks sso."""
        conn = await connection(self.db, tenant_id, "oidc")
        if conn is None or not conn.enabled:
            raise NotFound(
                "This organisation has no enabled OpenID Connect sign-in.", code="sso_not_configured"
            )
        await require_sso_plan(self.db, tenant_id, self.catalog)
        return conn

    async def start(self, tenant_id: str, ip: str) -> Started:
        """A new sign-in into ``tenant_id`` by a browser at ``ip``."""
        conn = await self.enabled_connection(tenant_id)
        await self.limiter.enforce(STARTS_PER_IP, ip)
        metadata = await self.directory.metadata(conn.config["issuer"])
        state, nonce, verifier = (
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(48),
        )
        binding = secrets.token_urlsafe(32)
        pending = PendingSignIn(tenant_id, conn.id, metadata.issuer, nonce, verifier, digest(binding))
        await self.kv.set(state_key(state), json.dumps(asdict(pending)).encode(), ttl=self.state_ttl)
        url = grants.prepare_grant_uri(
            metadata.authorization_endpoint,
            conn.config["client_id"],
            "code",
            redirect_uri=self.redirect_uri,
            scope=" ".join(conn.config.get("scopes") or ["openid", "email"]),
            state=state,
            nonce=nonce,
            code_challenge=pkce.create_s256_code_challenge(verifier),
            code_challenge_method="S256",
        )
        return Started(url, binding)

    async def finish(
        self,
        *,
        state: str | None,
        code: str | None,
        browser_binding: str | None,
        error: str | None = None,
        error_description: str | None = None,
        iss: str | None = None,
    ) -> SignedIn:
        """The provider's redirect back: a session for the signed-in user, or a 4xx saying why not."""
        raw = await self.kv.take(state_key(state)) if state else None
        if raw is None:
            raise state_refused()
        pending = PendingSignIn(**json.loads(raw))
        if not browser_binding or not hmac.compare_digest(digest(browser_binding), pending.browser):
            raise ValidationFailed(
                "This sign-in was started in another browser, or the browser did not keep its cookie; "
                "start it again here.",
                code="sso_browser_mismatch",
            )
        if error:
            raise provider_refused(error, error_description)
        if not code:
            raise ValidationFailed("The identity provider sent no authorization code.", param="code")
        conn = await self.enabled_connection(pending.tenant_id)
        if conn.id != pending.connection_id or conn.config["issuer"] != pending.issuer:
            raise state_refused()  # the admin replaced the connection during this sign-in
        metadata = await self.directory.metadata(pending.issuer)
        if iss is not None and iss != metadata.issuer:  # RFC 9207: an answer meant for another provider
            raise AuthFailed("The sign-in answer comes from another issuer.", code="sso_issuer_mismatch")
        tokens = await self.exchange(metadata, conn, code, pending.code_verifier)
        id_token, access_token = tokens.get("id_token"), tokens.get("access_token")
        if not isinstance(id_token, str):
            raise refused("missing", "the token endpoint returned none")
        claims = await self.id_tokens.validate(
            metadata,
            conn.config["client_id"],
            id_token,
            pending.nonce,
            access_token if isinstance(access_token, str) else None,
        )
        user = await provision(self.db, self.clock.now(), conn, claims["email"])
        return self.sessions.issue(user)

    async def exchange(
        self, metadata: ProviderMetadata, conn: SsoConnection, code: str, verifier: str
    ) -> dict[str, object]:
        """The token endpoint's answer for ``code``, with the client authenticated as the provider allows."""
        body = grants.prepare_token_request(
            "authorization_code", code=code, redirect_uri=self.redirect_uri, code_verifier=verifier
        )
        auth = oauth2_auth.ClientAuth(
            conn.config["client_id"], self.box.decrypt(conn.secret or ""), metadata.client_auth_method
        )
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        _, headers, body = auth.prepare("POST", metadata.token_endpoint, headers, body)
        status, answer = await self.http.request(
            "POST", metadata.token_endpoint, "token endpoint", body=body, headers=headers
        )
        if status != 200:
            error = str(answer.get("error") or f"HTTP {status}")[:100]
            hint = " Check the connection's client_id and client_secret." if error == "invalid_client" else ""
            raise AuthFailed(
                f"The identity provider refused to exchange the authorization code: {error}.{hint}",
                code="sso_code_refused",
                extra={"provider_error": error},
            )
        return answer
