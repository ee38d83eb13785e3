"""The OAuth flows (docs/oauth.md): authorization, consent, tokens, revocation, introspection and
client registration on authlib's server. ``OAuthService.flows`` (service.py) builds them at the first
flow, which keeps authlib and the cryptography under it (~10 MB) out of workers that never see one."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import OAuth2Error

from agent_server.capabilities.services import Services
from agent_server.oauth.bridge import JsonOAuthRequest, OAuthRequest, in_thread
from agent_server.oauth.endpoints import Introspection, Registration, Revocation
from agent_server.oauth.id_jag_grant import IdJagGrant
from agent_server.oauth.metadata_documents import MetadataDocuments
from agent_server.oauth.server import Server
from agent_server.oauth.store import OAuthStore
from agent_server.oauth.vocabulary import (
    SCOPE_TEXT,
    Answer,
    ConsentRequest,
    Identify,
    Items,
    OAuthError,
    Owner,
)
from agent_server.webhooks.url_guard import UrlGuard


class OAuthFlows:
    def __init__(self, services: Services, store: OAuthStore, issuer: str, identify: Identify) -> None:
        settings = services.settings
        self.store = store
        self.server = Server(store, [issuer])
        self.server.register_endpoint(Revocation)
        self.server.register_endpoint(Introspection)
        self.server.register_grant(IdJagGrant)
        self.server.identify = identify
        # The webhooks' guard, with the same resolvers (AGENTGATE_DNS_NAMESERVERS when set).
        guard = UrlGuard.for_mode(settings.sandbox, nameservers=settings.dns_nameservers)
        self.server.documents = MetadataDocuments(guard, store, services.clock)
        self.registration = Registration(
            self.server, {"scopes_supported": list(self.server.scopes_supported)}
        )

    def _request(
        self, method: str, uri: str, headers: Any, query: Items = (), form: Items = ()
    ) -> OAuthRequest:
        return OAuthRequest(method, uri, headers, list(query), list(form))

    async def consent_request(self, uri: str, headers: Any, query: Items) -> ConsentRequest:
        """Validate an authorization request; OAuthError when it is not one to ask a person about."""
        request = self._request("GET", uri, headers, query)
        try:
            grant = await in_thread(self.server.get_consent_grant, request)
        except OAuth2Error as error:
            raise OAuthError(self.server.handle_error_response(request, error)) from None
        client = grant.client.row
        redirect = grant.request.payload.redirect_uri or grant.client.get_default_redirect_uri() or ""
        scope = grant.client.get_allowed_scope(grant.request.payload.scope or client.scope)
        return ConsentRequest(
            client.client_id,
            client.client_name,
            urlsplit(redirect).netloc,
            [(name, SCOPE_TEXT.get(name, name)) for name in scope.split()],
        )

    async def decide(self, uri: str, headers: Any, query: Items, owner: Owner | None) -> str:
        """The redirect back to the client: a code when ``owner`` consented, access_denied otherwise."""
        request = self._request("GET", uri, headers, query)
        try:
            grant = await in_thread(self.server.get_consent_grant, request)
        except OAuth2Error as error:
            raise OAuthError(self.server.handle_error_response(request, error)) from None
        answer = await in_thread(self.server.create_authorization_response, request, owner, grant)
        location = OAuthError(answer).redirect
        if location is None:
            raise OAuthError(answer)
        if owner is not None:
            scope = grant.client.get_allowed_scope(grant.request.payload.scope or grant.client.row.scope)
            await self.store.remember(owner, grant.client.get_client_id(), scope)
        return location

    async def token(self, uri: str, headers: Any, form: Items) -> Answer:
        return await in_thread(
            self.server.create_token_response, self._request("POST", uri, headers, form=form)
        )

    async def revoke(self, uri: str, headers: Any, form: Items) -> Answer:
        request = self._request("POST", uri, headers, form=form)
        return await in_thread(self.server.create_endpoint_response, "revocation", request)

    async def introspect(self, uri: str, headers: Any, form: Items) -> Answer:
        request = self._request("POST", uri, headers, form=form)
        return await in_thread(self.server.create_endpoint_response, "introspection", request)

    async def register(self, uri: str, headers: Any, data: dict[str, Any]) -> Answer:
        request = JsonOAuthRequest("POST", uri, headers, data)
        try:
            status, body, answer_headers = await in_thread(self.registration, request)
        except OAuth2Error as error:
            status, body, answer_headers = error()
        return status, body, list(answer_headers)
