"""Admin access tokens: JWT, HS256 only, with checked typ, iss, aud, exp, nbf, iat and sub (RFC 8725).

The algorithm is pinned (never read from the token), so ``alg: none`` and algorithm confusion fail.
Time checks use the service clock instead of PyJWT's wall clock, so tests move time instead of
sleeping; PyJWT still verifies the signature, iss, aud and the presence of every required claim.
Every time claim is an integer and gets the same small leeway (30 s, RFC 7519's "few minutes" at
most): a token not valid yet (``nbf`` or ``iat`` in the future) is refused like a forged one.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, ExpiredToken
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.secret_files import load_or_create
from agent_server.foundation.settings import Settings

# PyJWT imports cryptography (~9 MB) at import; a worker serving only API keys never signs in anyone.
jwt = lazy_module("jwt")
ALGORITHM = "HS256"
TOKEN_TYPE = "at+jwt"  # explicit typing: another JWT of ours can never pass as an admin token
LEEWAY_SECONDS = 30
MIN_SECRET_BYTES = 32
_REQUIRED = ["exp", "iat", "iss", "aud", "sub"]
_OPTIONS = {"require": _REQUIRED, "verify_exp": False, "verify_iat": False, "verify_nbf": False}


@dataclass(frozen=True, slots=True)
class AdminClaims:
    user_id: str
    tenant_id: str
    permissions: frozenset[str]
    version: int = 0  # the user's token version at issue; a later sign-out raises it
    issued_at: int = 0  # when the user signed in: actions that add a credential need a recent one
    # The member's role; the session check replaces it with the user's current one (roles.py).
    role: str | None = None


def bearer_challenge(realm: str, error: str = "invalid_token", **params: str) -> str:
    """RFC 6750 ``WWW-Authenticate`` value; extra params (e.g. resource_metadata) are appended."""
    parts = [f'realm="{realm}"', f'error="{error}"', *(f'{k}="{v}"' for k, v in params.items())]
    return "Bearer " + ", ".join(parts)


def signing_secret(settings: Settings) -> bytes:
    """The configured secret, else one generated at first start and kept in data_dir (mode 0600)."""
    if settings.jwt_secret is not None:
        secret = settings.jwt_secret.get_secret_value().encode()
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"AGENTGATE_JWT_SECRET must have at least {MIN_SECRET_BYTES} bytes")
        return secret
    return load_or_create(settings.data_dir, "jwt_secret", lambda: secrets.token_urlsafe(64).encode())


class TokenService:
    def __init__(
        self, secret: bytes, *, issuer: str, audience: str, ttl: int, clock: Clock, realm: str = "agentgate"
    ) -> None:
        self._secret, self.issuer, self.audience, self.ttl, self._clock = secret, issuer, audience, ttl, clock
        self.challenge = {"WWW-Authenticate": bearer_challenge(realm)}

    def issue(
        self, user_id: str, tenant_id: str, permissions: list[str], version: int = 0, role: str | None = None
    ) -> tuple[str, int]:
        """``tenant_id`` is "" for a user of no organisation (who left or was removed)."""
        now = int(self._clock.now())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": user_id,
            "tenant": tenant_id,
            "permissions": sorted(permissions),
            "ver": version,
            "role": role,
            "iat": now,
            "exp": now + self.ttl,
            "jti": secrets.token_hex(8),
        }
        token = jwt.encode(claims, self._secret, algorithm=ALGORITHM, headers={"typ": TOKEN_TYPE})
        return token, self.ttl

    def verify(self, token: str) -> AdminClaims:
        try:
            if jwt.get_unverified_header(token).get("typ") != TOKEN_TYPE:
                raise self.invalid("The token is not an admin access token.")
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                audience=self.audience,
                issuer=self.issuer,
                options=_OPTIONS,  # type: ignore[arg-type]
            )
        except jwt.InvalidTokenError:
            raise self.invalid("The access token is invalid.") from None
        exp, iat, tenant, permissions = (claims.get(k) for k in ("exp", "iat", "tenant", "permissions"))
        not_before, version, role = claims.get("nbf", iat), claims.get("ver", 0), claims.get("role")
        if not (_is_time(exp) and _is_time(iat) and _is_time(not_before) and isinstance(tenant, str)):
            raise self.invalid("The access token is invalid.")
        if not isinstance(version, int) or isinstance(version, bool):
            raise self.invalid("The access token is invalid.")
        if not (isinstance(permissions, list) and all(isinstance(p, str) for p in permissions)):
            raise self.invalid("The access token is invalid.")
        if role is not None and not isinstance(role, str):
            raise self.invalid("The access token is invalid.")
        now = self._clock.now()
        if now > exp + LEEWAY_SECONDS:
            raise ExpiredToken(
                "The access token expired; log in again at /admin/auth/login.", headers=self.challenge
            )
        if iat > now + LEEWAY_SECONDS or not_before > now + LEEWAY_SECONDS:
            raise self.invalid("The access token is not valid yet.")
        return AdminClaims(str(claims["sub"]), tenant, frozenset(permissions), version, iat, role)

    def invalid(self, message: str) -> AuthFailed:
        return AuthFailed(message, code="invalid_token", headers=self.challenge)


def _is_time(value: object) -> bool:
    """A NumericDate as we issue it: an integer (a boolean is an int to Python, not a time)."""
    return isinstance(value, int) and not isinstance(value, bool)
