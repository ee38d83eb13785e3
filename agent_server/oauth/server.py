"""The authorization server: authlib's ``AuthorizationServer`` with the authorization-code grant
(PKCE with S256 required), the refresh-token grant (rotated on every use; a reused refresh token
revokes its family), RFC 8707 resource indicators and our tables (store.py).

authlib runs in a worker thread (bridge.py); every hook here calls the store through ``run``.
"""

from __future__ import annotations

import secrets
from typing import Any

from authlib.oauth2.rfc6749 import AuthorizationServer, OAuth2Error
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, RefreshTokenGrant
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7636 import CodeChallenge

from agent_server.oauth.bridge import run
from agent_server.oauth.models import Client, Code, Token
from agent_server.oauth.store import ACCESS_SECONDS, Issued, OAuthStore
from agent_server.oauth.tables import OAuthCode
from agent_server.oauth.vocabulary import ACCESS_PREFIX, REFRESH_PREFIX, SCOPES, Owner

__all__ = ["SCOPES", "Server"]


class InvalidTarget(OAuth2Error):
    """RFC 8707: the ``resource`` is not one this server issues tokens for."""

    error = "invalid_target"


class S256Only(CodeChallenge):
    """PKCE on every authorization request, with S256 only (OAuth 2.1; ``plain`` is refused)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError(
                "PKCE is required: send code_challenge with code_challenge_method=S256."
            )
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Only code_challenge_method=S256 is supported.")
        super().validate_code_challenge(grant, redirect_uri)

    def get_authorization_code_challenge(self, authorization_code: Code) -> str:
        return authorization_code.row.code_challenge

    def get_authorization_code_challenge_method(self, authorization_code: Code) -> str:
        return "S256"


def _resource(server: Server, request: Any, bound: str | None = None) -> str:
    """The request's ``resource``: one of the server's, and the one the grant is bound to."""
    values = request.payload.datalist.get("resource", [])
    if len(values) > 1:
        raise InvalidTarget("Send one resource.")
    wanted = (values[0].rstrip("/") if values else None) or bound or server.resources[0]
    if wanted not in server.resources:
        raise InvalidTarget(f"Tokens are issued for {', '.join(server.resources)} only.")
    if bound is not None and wanted != bound:
        raise InvalidTarget("The resource differs from the one the grant was made for.")
    return wanted


class CodeGrant(AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

    def validate_authorization_request(self) -> str:
        redirect_uri = super().validate_authorization_request()
        try:
            _resource(self.server, self.request)
        except InvalidTarget as error:
            error.redirect_uri = redirect_uri  # a known client at a registered URI hears of it
            raise
        return redirect_uri

    def save_authorization_code(self, code: str, request: Any) -> None:
        owner: Owner = request.user
        row = OAuthCode(
            digest="",
            client_id=request.client.get_client_id(),
            user_id=owner.user_id,
            tenant_id=owner.tenant_id,
            redirect_uri=request.payload.redirect_uri or request.client.get_default_redirect_uri() or "",
            # what the consent page showed: the scopes asked for (default: the client's), the client's only
            scope=request.client.get_allowed_scope(request.payload.scope or request.client.row.scope),
            resource=_resource(self.server, request),
            code_challenge=request.payload.data["code_challenge"],
            created_at=None,  # type: ignore[arg-type]  # set by the store
            expires_at=None,  # type: ignore[arg-type]
        )
        run(self.server.store.add_code, code, row)

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        return run(self.server.store.take_code, code, client.get_client_id())

    def delete_authorization_code(self, authorization_code: Code) -> None:
        pass  # taken for good by query_authorization_code

    def authenticate_user(self, authorization_code: Code) -> Owner:
        row = authorization_code.row
        _resource(self.server, self.request, row.resource)  # the token request may not switch resource
        self.request.issued = Issued(
            row.digest, row.client_id, Owner(row.user_id, row.tenant_id), row.scope, row.resource
        )  # type: ignore[attr-defined]
        return Owner(row.user_id, row.tenant_id)


class RefreshGrant(RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        token = run(self.server.store.refresh_token, refresh_token)
        return token if token is not None and not token.is_expired() else None

    def authenticate_user(self, refresh_token: Token) -> Owner:
        row = refresh_token.row
        _resource(self.server, self.request, row.resource)
        if not run(self.server.store.rotate, refresh_token):  # before the new token is saved
            raise InvalidGrantError("The refresh token was used already.")
        scope = self.request.payload.scope or row.scope
        owner = Owner(row.user_id, row.tenant_id)
        self.request.issued = Issued(row.family_id, row.client_id, owner, scope, row.resource)  # type: ignore[attr-defined]
        return owner

    def revoke_old_credential(self, refresh_token: Token) -> None:
        pass  # rotated in authenticate_user, before the new token exists


def _access_token(*_: Any, **__: Any) -> str:
    return ACCESS_PREFIX + secrets.token_urlsafe(32)


def _refresh_token(*_: Any, **__: Any) -> str:
    return REFRESH_PREFIX + secrets.token_urlsafe(32)


class Server(AuthorizationServer):
    def __init__(self, store: OAuthStore, resources: list[str]) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.store, self.resources = store, resources
        self.documents: Any = None  # metadata_documents.MetadataDocuments, set by the service
        self.identify: Any = None  # AssertedKeys.person: an ID-JAG's verified assertion and person
        self.register_grant(CodeGrant, [S256Only(required=True)])
        self.register_grant(RefreshGrant)
        generator = BearerTokenGenerator(
            _access_token, _refresh_token, lambda client, grant_type: ACCESS_SECONDS
        )
        self.register_token_generator("default", generator)

    def query_client(self, client_id: str) -> Client | None:
        if client_id.startswith(("https://", "http://")):  # a Client ID Metadata Document
            row = run(self.documents.client, client_id) if self.documents is not None else None
        else:
            row = run(self.store.client, client_id)
        return Client(row) if row is not None else None

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        run(self.store.save_token, token, request.issued)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def create_oauth2_request(self, request: Any) -> Any:
        return request  # built by the route (bridge.OAuthRequest)

    def create_json_request(self, request: Any) -> Any:
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, list[tuple[str, str]]]:
        return status, body, list(headers)
