"""Identity assertions (ID-JAG, ``urn:ietf:params:oauth:token-type:id-jag``) checked against the
organisation's own identity provider (docs/oauth.md, "Identity assertions").

An ID-JAG is a JWT an identity provider signs for a person (IETF draft "Identity Assertion
Authorization Grant"): ``typ`` ``oauth-id-jag+jwt``, ``iss`` the provider, ``aud`` this service's
issuer, ``client_id`` the agent's client, ``sub`` and ``email`` the person, ``exp``, ``iat`` and a
``jti`` that is used once. Which provider may assert whom is the single sign-on rule: the e-mail's
domain is a verified domain of an organisation, and ``iss`` is exactly the issuer of that
organisation's enabled OIDC connection, whose published key set (fetched through the outbound URL
guard, cached an hour, fetched again once for an unknown key) must verify the signature.

Each failure has its own code (400 for a token that is not an ID-JAG at all, 401 otherwise); the
``jti`` is spent only once everything else passed, so a forged assertion cannot burn a real one's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from agent_server.accounts.sso.enforcement import require_sso_plan
from agent_server.accounts.sso.oidc_metadata import IssuerDirectory
from agent_server.accounts.sso.provision import connection, domain_of, tenant_for_domain
from agent_server.accounts.tables import SsoConnection
from agent_server.agent_auth.tables import AssertionUse
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, ValidationFailed
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.timeutil import utc
from agent_server.gateway.plans import PlanCatalog
from agent_server.storage.db import Database

# joserfc (and the cryptography under it, ~9 MB) loads at the first assertion checked.
jwt = lazy_module("joserfc.jwt")
jose = lazy_module("joserfc.errors")
jws = lazy_module("joserfc.jws")
ID_JAG_TYP = "oauth-id-jag+jwt"
LEEWAY_SECONDS = 60
MAX_LIFETIME_SECONDS = 3600  # an assertion valid longer is refused: they are meant to live minutes
REQUIRED = ("iss", "sub", "aud", "client_id", "email", "exp", "iat", "jti")


@dataclass(frozen=True, slots=True)
class Assertion:
    """A verified assertion: who, for which agent, asserted by which organisation's provider."""

    connection: SsoConnection
    email: str
    subject: str
    client_id: str


def malformed(problem: str) -> ValidationFailed:
    return ValidationFailed(
        f"The assertion is not an ID-JAG this service can use: {problem}.",
        code="assertion_malformed",
        param="assertion",
    )


def assertion_refused(code: str, problem: str) -> AuthFailed:
    return AuthFailed(f"The identity assertion is refused: {problem}.", code=code)


def _peek(assertion: str) -> dict[str, Any]:
    """The claims, unverified: only to find the organisation whose provider must have signed them."""
    try:
        token = jws.extract_compact(assertion.encode())
        claims = json.loads(token.payload)
    except (jose.JoseError, ValueError, UnicodeDecodeError):
        raise malformed("it is not a compact JWT") from None
    if token.headers().get("typ") != ID_JAG_TYP:
        raise malformed(f"its header typ must be {ID_JAG_TYP}")
    if not isinstance(claims, dict):
        raise malformed("its payload is not a JSON object")
    missing = [name for name in REQUIRED if claims.get(name) in (None, "")]
    if missing:
        raise malformed(f"it lacks the claim(s) {', '.join(missing)}")
    for name in ("iss", "sub", "client_id", "email", "jti"):
        if not isinstance(claims[name], str) or len(claims[name]) > 1024:
            raise malformed(f"its claim {name} must be a string of at most 1024 characters")
    if "@" not in claims["email"]:
        raise malformed("its email claim is not an e-mail address")
    return claims


def _explain(exc: jose.JoseError) -> AuthFailed:
    if isinstance(exc, jose.BadSignatureError | jose.InvalidKeyIdError):
        return assertion_refused(
            "assertion_signature_invalid", "its signature does not verify with the provider's keys"
        )
    if isinstance(exc, jose.ExpiredTokenError):
        return assertion_refused("assertion_expired", "it has expired")
    if (
        isinstance(exc, jose.ClaimError)
        and not isinstance(exc, jose.MissingClaimError)
        and exc.claim == "aud"
    ):
        return assertion_refused(
            "assertion_audience_mismatch", "its audience (aud) is not this service's issuer"
        )
    if isinstance(exc, jose.ClaimError) and exc.claim in ("iat", "nbf"):
        return assertion_refused("assertion_not_yet_valid", "it is not valid yet (iat or nbf in the future)")
    return assertion_refused("assertion_signature_invalid", f"it does not verify ({exc.error})")


class IdJagVerifier:
    def __init__(
        self, db: Database, clock: Clock, directory: IssuerDirectory, catalog: PlanCatalog, audience: str
    ) -> None:
        self.db, self.clock, self.directory, self.catalog = db, clock, directory, catalog
        self.audience = audience  # this service's issuer: the public base URL

    async def verify(self, assertion: str) -> Assertion:
        claims = _peek(assertion)
        email = claims["email"].strip().lower()
        tenant_id = await tenant_for_domain(self.db, domain_of(email))
        conn = await connection(self.db, tenant_id, "oidc") if tenant_id is not None else None
        if conn is None or not conn.enabled or conn.config.get("issuer") != claims["iss"]:
            raise assertion_refused(
                "assertion_issuer_untrusted",
                f"{claims['iss'][:200]} is not the identity provider of an organisation that verified "
                f"the domain {domain_of(email)}",
            )
        await require_sso_plan(self.db, conn.tenant_id, self.catalog)
        now = int(self.clock.now())
        verified = await self._verified(assertion, claims["iss"], now)
        if verified["exp"] - now > MAX_LIFETIME_SECONDS:
            raise malformed(f"it is valid for more than {MAX_LIFETIME_SECONDS} seconds")
        await self._spend(claims["iss"], verified["jti"], float(verified["exp"]), now)
        return Assertion(conn, email, verified["sub"], verified["client_id"])

    async def _verified(self, assertion: str, issuer: str, now: int) -> dict[str, Any]:
        metadata = await self.directory.metadata(issuer)
        registry = jws.JWSRegistry(algorithms=list(metadata.signing_algorithms), strict_check_header=False)
        try:
            try:
                keys = await self.directory.keys(metadata.jwks_uri)
                token = jwt.decode(assertion, keys, registry=registry)
            except jose.InvalidKeyIdError:
                keys = await self.directory.keys(metadata.jwks_uri, fresh=True)
                token = jwt.decode(assertion, keys, registry=registry)
            jwt.JWTClaimsRegistry(
                now=now,
                leeway=LEEWAY_SECONDS,
                iss={"essential": True, "value": issuer},
                aud={"essential": True, "value": self.audience},
                exp={"essential": True},
                iat={"essential": True},
                jti={"essential": True},
            ).validate(token.claims)
        except jose.JoseError as exc:
            raise _explain(exc) from None
        except (ValueError, TypeError):
            raise malformed("its claims have the wrong types") from None
        return token.claims

    async def _spend(self, issuer: str, jti: str, expires: float, now: int) -> None:
        """Record the jti until the assertion expires (plus the leeway); a second use is 401."""
        digest = hashlib.sha256(f"{issuer}\n{jti}".encode()).hexdigest()
        try:
            async with self.db.session() as session:
                await session.execute(delete(AssertionUse).where(AssertionUse.expires_at < utc(now)))  # type: ignore[arg-type]
                session.add(AssertionUse(digest=digest, expires_at=utc(expires + LEEWAY_SECONDS)))
        except IntegrityError:
            raise assertion_refused(
                "assertion_replayed", "its jti was used already; ask the provider for a new one"
            ) from None
