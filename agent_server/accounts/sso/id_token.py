"""ID-token validation (OpenID Connect Core 1.0, 3.1.3.7) with the issuer's published keys.

The signature is checked with the provider's key set (fetched again once when the token names an
unknown key), then the claims: iss, aud (this client), exp and iat against our clock with a minute
of leeway, the nonce of this sign-in, azp when present (and required with several audiences),
at_hash when present. Sign-in also needs an e-mail address the provider has verified.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_server.accounts.sso.oidc_metadata import IssuerDirectory, ProviderMetadata
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, PermissionDenied
from agent_server.foundation.lazy import lazy_module

if TYPE_CHECKING:
    from joserfc.errors import JoseError

# Authlib and joserfc load at the first ID token checked, not in every worker.
oidc_core = lazy_module("authlib.oidc.core")
jwt = lazy_module("joserfc.jwt")
jose_errors = lazy_module("joserfc.errors")
jws = lazy_module("joserfc.jws")

LEEWAY_SECONDS = 60
CLAIM_PROBLEMS = {
    "iss": ("wrong_issuer", "it was issued by another issuer"),
    "aud": ("wrong_audience", "it was issued to another client (aud)"),
    "azp": ("wrong_authorized_party", "its authorized party (azp) is another client"),
    "nonce": ("wrong_nonce", "its nonce is not the one of this sign-in"),
    "iat": ("issued_in_future", "it was issued in the future"),
    "nbf": ("not_yet_valid", "it is not valid yet"),
    "at_hash": ("wrong_at_hash", "its at_hash does not match the access token"),
}


def refused(reason: str, problem: str) -> AuthFailed:
    return AuthFailed(
        f"The identity provider's ID token is refused: {problem}.",
        code="sso_id_token_invalid",
        extra={"reason": reason},
    )


def _explain(exc: JoseError) -> AuthFailed:
    if isinstance(exc, jose_errors.BadSignatureError):
        return refused("bad_signature", "its signature does not match the issuer's keys")
    if isinstance(exc, jose_errors.InvalidKeyIdError):
        return refused("unknown_key", "it is signed with a key the issuer does not publish")
    if isinstance(exc, jose_errors.UnsupportedAlgorithmError):
        return refused("algorithm_refused", "it is signed with an algorithm the issuer does not announce")
    if isinstance(exc, jose_errors.ExpiredTokenError):
        return refused("expired", "it has expired")
    if isinstance(exc, jose_errors.MissingClaimError):
        return refused("missing_claim", f"it lacks the claim {exc.claim}")
    if isinstance(exc, jose_errors.ClaimError):
        reason, problem = CLAIM_PROBLEMS.get(
            exc.claim, ("invalid_claim", f"its claim {exc.claim} is invalid")
        )
        return refused(reason, problem)
    return refused("malformed", "it is not a signed JWT this service can read")


class IdTokenValidator:
    def __init__(self, directory: IssuerDirectory, clock: Clock, leeway: int = LEEWAY_SECONDS) -> None:
        self.directory, self.clock, self.leeway = directory, clock, leeway

    async def validate(
        self,
        metadata: ProviderMetadata,
        client_id: str,
        id_token: str,
        nonce: str,
        access_token: str | None = None,
    ) -> dict[str, Any]:
        """The token's claims, or AuthFailed (code sso_id_token_invalid, ``reason``) saying what is wrong."""
        registry = jws.JWSRegistry(algorithms=list(metadata.signing_algorithms), strict_check_header=False)
        try:
            try:
                keys = await self.directory.keys(metadata.jwks_uri)
                token = jwt.decode(id_token, keys, registry=registry)
            except jose_errors.InvalidKeyIdError:
                keys = await self.directory.keys(metadata.jwks_uri, fresh=True)
                token = jwt.decode(id_token, keys, registry=registry)
            options = {
                "iss": {"essential": True, "value": metadata.issuer},
                "aud": {"essential": True, "value": client_id},
                "exp": {"essential": True},
                "iat": {"essential": True},
                "nonce": {"essential": True, "value": nonce},
            }
            params = {"nonce": nonce, "client_id": client_id, "access_token": access_token}
            claims = oidc_core.CodeIDToken(token.claims, token.header, options, params)
            claims.validate(now=int(self.clock.now()), leeway=self.leeway)
        except jose_errors.JoseError as exc:
            raise _explain(exc) from None
        except (ValueError, TypeError):  # a payload that is not JSON, or claims of the wrong types
            raise refused("malformed", "it is not a signed JWT this service can read") from None
        return _require_verified_email(dict(claims))


def _require_verified_email(claims: dict[str, Any]) -> dict[str, Any]:
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email or len(email) > 320:
        raise PermissionDenied(
            "The identity provider did not assert an e-mail address; ask it to release the email "
            "claim (scope email) in the ID token.",
            code="sso_email_missing",
        )
    # Some providers send the boolean as a string.
    if claims.get("email_verified") not in (True, "true"):
        raise PermissionDenied(
            f"The identity provider has not verified {email}; verify it there, then sign in again.",
            code="sso_email_unverified",
        )
    return claims
