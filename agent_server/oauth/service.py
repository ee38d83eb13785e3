"""The OAuth service of an app (docs/oauth.md): what the ``/oauth/*`` routes and the consent page
call. Built once per app (``oauth_of``); it also teaches ``/v1`` to accept its access tokens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import OAuth2Error

from agent_server.capabilities.services import Services
from agent_server.foundation.errors import NotFound
from agent_server.foundation.timeutil import iso
from agent_server.gateway.service import Gateway
from agent_server.oauth.access import AccessTokens
from agent_server.oauth.bridge import JsonOAuthRequest, OAuthRequest, in_thread
from agent_server.oauth.endpoints import Introspection, Registration, Revocation
from agent_server.oauth.id_jag_grant import IdJagGrant
from agent_server.oauth.metadata_documents import MetadataDocuments
from agent_server.oauth.models import Owner
from agent_server.oauth.server import ACCESS_PREFIX, Server
from agent_server.oauth.store import OAuthStore
from agent_server.webhooks.url_guard import UrlGuard

EXTRAS_KEY = "oauth"
Items = Iterable[tuple[str, str]]
Answer = tuple[int, Any, list[tuple[str, str]]]
# An ID-JAG's verified assertion and its person (agent_server/agent_auth/asserted.py: AssertedKeys.person).
Identify = Callable[[str], Awaitable[tuple[Any, Any]]]
SCOPE_TEXT = {
    "chat": "send chat and completion requests to the models of your plan, spending your organisation's tokens",
    "embeddings": "create embeddings with your plan's models",
    "files": "upload and read files",
    "models": "list the models your organisation may use",
    "usage:read": "read your organisation's usage and spend",
    "keys:read": "list your organisation's API keys (never their secrets)",
    "keys:write": "create API keys for your organisation, with scopes it holds itself",
    "logs:read": "read your organisation's request log",
    "commerce:checkout": "buy from the catalogue on your behalf (trainings, consulting packages, hardware), "
    "paying with a payment token you give it; the orders are your organisation's",
}


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """What the consent page shows: the client, where it sends the answer, and each scope in words."""

    client_id: str
    client_name: str
    redirect_host: str
    scopes: list[tuple[str, str]]


class OAuthError(Exception):
    """An authorization request that cannot go back to the client: shown to the person instead."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(str(answer[1]))
        self.answer = answer

    @property
    def redirect(self) -> str | None:
        return next((value for name, value in self.answer[2] if name.lower() == "location"), None)


class OAuthService:
    def __init__(self, services: Services, gateway: Gateway, identify: Identify) -> None:
        settings = services.settings
        self.issuer = settings.public_base_url.rstrip("/")
        self.store = OAuthStore(services.db, services.clock)
        self.server = Server(self.store, [self.issuer])
        self.server.register_endpoint(Revocation)
        self.server.register_endpoint(Introspection)
        self.server.register_grant(IdJagGrant)
        self.server.identify = identify
        # The webhooks' guard, with the same resolvers (AGENTGATE_DNS_NAMESERVERS when set).
        guard = UrlGuard.for_mode(settings.sandbox, nameservers=settings.dns_nameservers)
        self.server.documents = MetadataDocuments(guard, self.store, services.clock)
        self.registration = Registration(
            self.server, {"scopes_supported": list(self.server.scopes_supported)}
        )
        self.tokens = AccessTokens(
            self.store,
            gateway.catalog,
            services.clock,
            resource=self.issuer,
            environment=gateway.environment,
            ttl=settings.key_cache_ttl_seconds,
            negotiated_limit=settings.negotiated_rate_limit,
        )
        gateway.keys.bearer, gateway.keys.bearer_prefix = self.tokens.principal, ACCESS_PREFIX

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

    async def remembered(self, client_id: str, owner: Owner, scope: list[str]) -> bool:
        return await self.store.consented(owner, client_id, " ".join(scope))

    async def connected_apps(self, user_id: str) -> list[dict[str, Any]]:
        return [
            connected_app_view(consent, client) for consent, client in await self.store.connected(user_id)
        ]

    async def disconnect(self, user_id: str, client_id: str) -> None:
        """Revoke a person's consent to a client and its tokens (404 when there is none)."""
        if not await self.store.disconnect(user_id, client_id):
            raise NotFound(f"No connected app {client_id}.", param="client_id")
        self.tokens.forget()  # this process refuses them at once; the others within the cache TTL

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


def connected_app_view(consent: Any, client: Any) -> dict[str, Any]:
    return {
        "object": "connected_app",
        "client_id": consent.client_id,
        "client_name": client.client_name if client is not None else consent.client_id,
        "redirect_hosts": sorted({urlsplit(uri).netloc for uri in (client.redirect_uris if client else [])}),
        "scopes": consent.scope.split(),
        "tenant_id": consent.tenant_id,
        "connected_at": iso(consent.created_at),
    }


def oauth_of(services: Services, gateway: Gateway, identify: Identify) -> OAuthService:
    extras = services.extras
    if EXTRAS_KEY not in extras:
        extras[EXTRAS_KEY] = OAuthService(services, gateway, identify)
    return extras[EXTRAS_KEY]
