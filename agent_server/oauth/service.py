"""The OAuth service of an app (docs/oauth.md): what the ``/oauth/*`` routes and the consent page
call. Built once per app (``oauth_of``); it also teaches ``/v1`` to accept its access tokens, which
needs only the store. The flows (authlib's server) are built at the first one (flows.py)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agent_server.capabilities.services import Services
from agent_server.foundation.errors import NotFound
from agent_server.foundation.timeutil import iso
from agent_server.gateway.service import Gateway
from agent_server.oauth.access import AccessTokens
from agent_server.oauth.store import OAuthStore
from agent_server.oauth.vocabulary import ACCESS_PREFIX, Answer, ConsentRequest, Identify, Items, Owner

if TYPE_CHECKING:
    from agent_server.oauth.flows import OAuthFlows

EXTRAS_KEY = "oauth"


class OAuthService:
    def __init__(self, services: Services, gateway: Gateway, identify: Identify) -> None:
        settings = services.settings
        self._services, self._identify = services, identify
        self.issuer = settings.public_base_url.rstrip("/")
        self.store = OAuthStore(services.db, services.clock)
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

    @cached_property
    def flows(self) -> OAuthFlows:
        from agent_server.oauth.flows import OAuthFlows  # authlib, at the first flow

        return OAuthFlows(self._services, self.store, self.issuer, self._identify)

    async def consent_request(self, uri: str, headers: Any, query: Items) -> ConsentRequest:
        """Validate an authorization request; OAuthError when it is not one to ask a person about."""
        return await self.flows.consent_request(uri, headers, query)

    async def decide(self, uri: str, headers: Any, query: Items, owner: Owner | None) -> str:
        """The redirect back to the client: a code when ``owner`` consented, access_denied otherwise."""
        return await self.flows.decide(uri, headers, query, owner)

    async def token(self, uri: str, headers: Any, form: Items) -> Answer:
        return await self.flows.token(uri, headers, form)

    async def revoke(self, uri: str, headers: Any, form: Items) -> Answer:
        return await self.flows.revoke(uri, headers, form)

    async def introspect(self, uri: str, headers: Any, form: Items) -> Answer:
        return await self.flows.introspect(uri, headers, form)

    async def register(self, uri: str, headers: Any, data: dict[str, Any]) -> Answer:
        return await self.flows.register(uri, headers, data)

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
