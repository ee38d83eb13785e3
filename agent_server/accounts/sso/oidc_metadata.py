"""OpenID provider discovery and signing keys, checked and cached per process.

The discovery document must name exactly the configured issuer (OpenID Connect Discovery 1.0,
section 4.3), offer the authorization code flow and PKCE with S256, and sign ID tokens with an
asymmetric algorithm. Documents and key sets are cached for an hour; a key set is fetched again at
once when a token names a key it lacks (the provider rotated its keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_server.accounts.sso.outbound import ProviderHttp, ProviderUnreachable
from agent_server.foundation.clock import Clock
from agent_server.foundation.lazy import lazy_module

if TYPE_CHECKING:
    from joserfc.jwk import KeySet

jose_errors = lazy_module("joserfc.errors")  # joserfc loads at the first key set fetched
jwk = lazy_module("joserfc.jwk")

CACHE_SECONDS = 3600.0
# Signed with the provider's private key; HS* (keyed with the client secret) and none are refused.
ACCEPTED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
CLIENT_AUTH_METHODS = ("client_secret_basic", "client_secret_post")  # in order of preference
# The discovery document's endpoints sign-in uses: field -> what messages call it.
ENDPOINTS = {
    "authorization_endpoint": "authorization endpoint",
    "token_endpoint": "token endpoint",
    "jwks_uri": "key set (jwks_uri)",
}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    signing_algorithms: tuple[str, ...]
    client_auth_method: str

    def endpoints(self) -> dict[str, str]:
        """The endpoint URLs by their field in the discovery document."""
        return {field: getattr(self, field) for field in ENDPOINTS}


def _invalid(issuer: str, problem: str) -> ProviderUnreachable:
    return ProviderUnreachable(f"The discovery document of {issuer} is not usable: {problem}.")


def parse_metadata(issuer: str, doc: dict[str, Any], http: ProviderHttp) -> ProviderMetadata:
    """Check a discovery document against what sign-in needs."""
    if doc.get("issuer") != issuer:
        raise _invalid(issuer, f"it names the issuer {str(doc.get('issuer'))[:200]!r}, not {issuer!r}")
    if "code" not in doc.get("response_types_supported", ["code"]):
        raise _invalid(issuer, "it does not offer the authorization code flow")
    if "S256" not in doc.get("code_challenge_methods_supported", ["S256"]):
        raise _invalid(issuer, "it does not offer PKCE with S256")
    offered = doc.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = tuple(alg for alg in ACCEPTED_ALGORITHMS if alg in offered)
    if not algorithms:
        raise _invalid(issuer, f"it signs ID tokens only with {offered}, none of {list(ACCEPTED_ALGORITHMS)}")
    # The default when the document is silent is client_secret_basic (OpenID Connect Discovery 1.0).
    methods = doc.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    auth_method = next((method for method in CLIENT_AUTH_METHODS if method in methods), None)
    if auth_method is None:
        raise _invalid(issuer, f"its token endpoint takes none of {list(CLIENT_AUTH_METHODS)}")
    urls = {field: http.check_syntax(doc.get(field), what, field) for field, what in ENDPOINTS.items()}
    return ProviderMetadata(
        issuer=issuer,
        authorization_endpoint=urls["authorization_endpoint"],
        token_endpoint=urls["token_endpoint"],
        jwks_uri=urls["jwks_uri"],
        signing_algorithms=algorithms,
        client_auth_method=auth_method,
    )


class IssuerDirectory:
    """Discovery documents by issuer and key sets by URL, each kept ``CACHE_SECONDS``."""

    def __init__(self, http: ProviderHttp, clock: Clock) -> None:
        self.http, self.clock = http, clock
        self._metadata: dict[str, tuple[float, ProviderMetadata]] = {}
        self._keys: dict[str, tuple[float, KeySet]] = {}

    def _cached(self, cache: dict[str, tuple[float, Any]], key: str) -> Any:
        entry = cache.get(key)
        return entry[1] if entry is not None and entry[0] > self.clock.now() else None

    async def metadata(self, issuer: str, *, fresh: bool = False) -> ProviderMetadata:
        found = None if fresh else self._cached(self._metadata, issuer)
        if found is None:
            doc = await self.http.get_json(discovery_url(issuer), "discovery document")
            found = parse_metadata(issuer, doc, self.http)
            self._metadata[issuer] = (self.clock.now() + CACHE_SECONDS, found)
        return found

    async def keys(self, jwks_uri: str, *, fresh: bool = False) -> KeySet:
        found = None if fresh else self._cached(self._keys, jwks_uri)
        if found is None:
            doc = await self.http.get_json(jwks_uri, "key set")
            try:
                found = jwk.KeySet.import_key_set(doc)  # type: ignore[arg-type]
            except (jose_errors.JoseError, ValueError, TypeError, KeyError) as exc:
                raise ProviderUnreachable(
                    f"The key set at {jwks_uri} is not a valid JWK set ({exc})."
                ) from None
            self._keys[jwks_uri] = (self.clock.now() + CACHE_SECONDS, found)
        return found
