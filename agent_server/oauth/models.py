"""What authlib's grants read: a client, an authorization code and a token, as its mixins ask."""

from __future__ import annotations

import hmac

from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, ClientMixin, TokenMixin
from authlib.oauth2.rfc6749.util import list_to_scope, scope_to_list

from agent_server.oauth.tables import OAuthClient, OAuthCode, OAuthToken
from agent_server.oauth.vocabulary import SCOPES, digest


class Client(ClientMixin):
    def __init__(self, row: OAuthClient) -> None:
        self.row = row

    def get_client_id(self) -> str:
        return self.row.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.row.redirect_uris
        return uris[0] if len(uris) == 1 else None  # with several, the request must name one

    def get_allowed_scope(self, scope: str) -> str:
        """The scopes asked for that this server knows; the registered ``scope`` is the default when
        a request names none. The person's consent, not the registration, decides what an app gets,
        so an app may ask for more later (the MCP step-up after a 403 ``insufficient_scope``)."""
        return list_to_scope([s for s in scope_to_list(scope) if s in SCOPES]) if scope else ""

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.row.redirect_uris  # exact match, as OAuth 2.1 requires

    def check_client_secret(self, client_secret: str) -> bool:
        stored = self.row.secret_digest
        return stored is not None and hmac.compare_digest(stored, digest(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.row.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.row.grant_types


class Code(AuthorizationCodeMixin):
    def __init__(self, row: OAuthCode) -> None:
        self.row = row

    def get_redirect_uri(self) -> str:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scope


class Token(TokenMixin):
    def __init__(self, row: OAuthToken, expired: bool) -> None:
        self.row, self.expired = row, expired

    def check_client(self, client: ClientMixin) -> bool:
        return client.get_client_id() == self.row.client_id

    def get_scope(self) -> str:
        return self.row.scope

    def get_expires_in(self) -> int:
        return 0

    def is_expired(self) -> bool:
        return self.expired

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None
