"""RFC 7591 dynamic client registration, RFC 7009 revocation and RFC 7662 introspection, as
authlib's endpoints.

Registration is open (MCP clients register themselves) and limited: per client IP by the route
(rate limit), and here in what a client may declare: at most 5 redirect URIs, each https or http
on loopback (RFC 8252), without a fragment; grant types authorization_code and refresh_token;
scopes among the server's; auth method none (public) or client_secret_basic/_post.
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint, InvalidClientMetadataError
from authlib.oauth2.rfc7662 import IntrospectionEndpoint

from agent_server.foundation.ids import new_id
from agent_server.foundation.timeutil import utc
from agent_server.foundation.urls import split_url
from agent_server.gateway.tables import unix
from agent_server.oauth.bridge import run
from agent_server.oauth.models import Token
from agent_server.oauth.tables import OAuthClient
from agent_server.oauth.vocabulary import AUTH_METHODS, DEFAULT_SCOPES, GRANT_TYPES, SCOPES, digest

MAX_REDIRECT_URIS = 5
LOOPBACK = ("localhost", "127.0.0.1", "[::1]", "::1")


def redirect_problem(uri: Any) -> str | None:
    if not isinstance(uri, str) or len(uri) > 2000:
        return "a redirect URI is not a string of at most 2000 characters"
    parts = split_url(uri)
    if parts is None:
        return f"{uri} is not a valid URL"
    if parts.fragment:
        return f"{uri} has a fragment"
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname in LOOPBACK:
        return None
    return f"{uri} is neither https nor http on loopback"


TEXT_FIELDS = ("client_name", "scope", "token_endpoint_auth_method", "client_uri", "logo_uri", "tos_uri",
               "policy_uri", "jwks_uri", "software_id", "software_version")  # fmt: skip
LIST_FIELDS = ("grant_types", "response_types", "contacts")
KEPT = (
    "client_name",
    "redirect_uris",
    "token_endpoint_auth_method",
    "grant_types",
    "response_types",
    "scope",
)


def _type_problem(data: dict[str, Any]) -> str | None:
    """What authlib's metadata checks take for granted: text where text belongs, lists of text."""
    for name in TEXT_FIELDS:
        if name in data and (not isinstance(data[name], str) or len(data[name]) > 2000):
            return f"{name} must be a string of at most 2000 characters"
    for name in LIST_FIELDS:
        value = data.get(name, [])
        if not isinstance(value, list) or len(value) > 10 or not all(isinstance(v, str) for v in value):
            return f"{name} must be a list of at most 10 strings"
    return None


class Registration(ClientRegistrationEndpoint):
    def __init__(self, server: Any, metadata: dict[str, Any]) -> None:
        super().__init__(server)
        self.metadata = metadata

    def get_server_metadata(self) -> dict[str, Any]:
        return self.metadata

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration; the route limits it per client IP

    def resolve_public_key(self, request: Any) -> None:
        return None

    def generate_client_id(self, request: Any) -> str:
        return new_id("ocl_", 24)

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        data = request.payload.data
        uris = data.get("redirect_uris")
        if not isinstance(uris, list) or not 1 <= len(uris) <= MAX_REDIRECT_URIS:
            raise InvalidClientMetadataError(f"redirect_uris: 1 to {MAX_REDIRECT_URIS} URIs.")
        problem = next((p for p in map(redirect_problem, uris) if p), None) or _type_problem(data)
        if problem:
            raise InvalidClientMetadataError(problem)
        try:
            metadata = super().extract_client_metadata(request)
        except (TypeError, ValueError, AttributeError):  # a value authlib's checks cannot read
            raise InvalidClientMetadataError("The client metadata has a value of the wrong type.") from None
        method = metadata.setdefault("token_endpoint_auth_method", "client_secret_basic")
        if method not in AUTH_METHODS:
            raise InvalidClientMetadataError(f"token_endpoint_auth_method: one of {', '.join(AUTH_METHODS)}.")
        grants = metadata.setdefault("grant_types", ["authorization_code"])
        if not set(grants) <= set(GRANT_TYPES) or not {"authorization_code", GRANT_TYPES[2]} & set(grants):
            raise InvalidClientMetadataError(f"grant_types: among {', '.join(GRANT_TYPES)}.")
        if set(metadata.setdefault("response_types", ["code"])) != {"code"}:
            raise InvalidClientMetadataError("response_types: code only.")
        metadata = {
            name: metadata[name] for name in KEPT if name in metadata
        }  # the answer shows what is kept
        metadata["scope"] = " ".join(
            s for s in (metadata.get("scope") or " ".join(DEFAULT_SCOPES)).split() if s in SCOPES
        )
        return metadata

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> OAuthClient:
        public = client_metadata["token_endpoint_auth_method"] == "none"
        if public:
            client_info.pop("client_secret", None)
            client_info.pop("client_secret_expires_at", None)
        row = OAuthClient(
            client_id=client_info["client_id"],
            client_name=str(client_metadata.get("client_name") or client_info["client_id"])[:200],
            redirect_uris=list(client_metadata["redirect_uris"]),
            token_endpoint_auth_method=client_metadata["token_endpoint_auth_method"],
            grant_types=list(client_metadata["grant_types"]),
            scope=client_metadata["scope"],
            secret_digest=None if public else digest(client_info["client_secret"]),
            created_at=utc(self.server.store.clock.now()),
        )
        run(self.server.store.add_client, row)
        return row


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = list(AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> Any:
        return _Presented(token_string)

    def revoke_token(self, token: Any, request: Any) -> None:
        run(self.server.store.revoke, token.value, request.client.get_client_id())


class Introspection(IntrospectionEndpoint):
    """RFC 7662 for a confidential client's own tokens (a public client cannot authenticate): others'
    tokens, unknown, expired, rotated or revoked ones are all just ``active: false``."""

    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        return run(self.server.store.presented, token_string)

    def check_permission(self, token: Token, client: Any, request: Any) -> bool:
        return token.check_client(client)

    def introspect_token(self, token: Token) -> dict[str, Any]:
        row = token.row
        return {
            "active": True,
            "scope": row.scope,
            "client_id": row.client_id,
            "sub": row.user_id,
            "tenant_id": row.tenant_id,
            "aud": row.resource,
            "iss": self.server.resources[0],
            "token_type": "Bearer",
            "iat": int(unix(row.created_at)),
            "exp": int(unix(row.access_expires_at)),
        }


class _Presented(Token):
    """A token as presented: the store revokes its family when it is this client's (RFC 7009 answers
    200 either way, so an unknown token reveals nothing)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def check_client(self, client: Any) -> bool:
        return True
