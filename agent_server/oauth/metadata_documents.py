"""Client ID Metadata Documents (the MCP authorization specification's client registration by URL):
a ``client_id`` that is a URL names the client's metadata, published there as JSON.

The document is fetched through the outbound URL guard (agent_server/webhooks/url_guard.py: https
to public addresses only, plus http and loopback in sandbox mode; private and reserved addresses
never; the connection pinned to the checked address; no redirects), read up to 5 KiB, and must
name itself (``client_id`` equal to the URL exactly), list its redirect URIs (the rules of dynamic
registration) and be a public client (``token_endpoint_auth_method`` none). A good document is kept
``CACHE_SECONDS`` in the process and in ``oauth_clients`` (so the consent page and "Connected apps"
show its name); a refused one is not a client at all.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import utc
from agent_server.oauth.endpoints import redirect_problem
from agent_server.oauth.store import OAuthStore
from agent_server.oauth.tables import OAuthClient
from agent_server.oauth.vocabulary import DEFAULT_SCOPES, GRANT_TYPES, SCOPES
from agent_server.webhooks.url_guard import UrlGuard, pinned_client

CACHE_SECONDS = 300
MAX_BYTES = 5 * 1024
TIMEOUT_SECONDS = 5.0


def is_document_url(client_id: str) -> bool:
    return client_id.startswith(("https://", "http://"))


class MetadataDocuments:
    def __init__(self, guard: UrlGuard, store: OAuthStore, clock: Clock) -> None:
        self.guard, self.store, self.clock = guard, store, clock
        self._cache: dict[str, tuple[float, OAuthClient | None]] = {}

    async def client(self, url: str) -> OAuthClient | None:
        """The client the document at ``url`` describes; None when it cannot be fetched or is wrong."""
        now = self.clock.now()
        cached = self._cache.get(url)
        if cached is not None and cached[0] > now:
            return cached[1]
        row = await self._fetch(url)
        if row is not None:
            await self.store.put_client(row)
        if len(self._cache) > 1000:
            self._cache.clear()
        self._cache[url] = (now + CACHE_SECONDS, row)
        return row

    async def _fetch(self, url: str) -> OAuthClient | None:
        if len(url) > 2000:
            return None
        try:
            target = await self.guard.resolve(url)
            async with (
                pinned_client(target, TIMEOUT_SECONDS) as client,
                client.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    return None
                raw = b""
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > MAX_BYTES:
                        return None
            document = json.loads(raw)
        except (ValidationFailed, httpx.HTTPError, ValueError):
            return None
        return _client_of(url, document, utc(self.clock.now()))


def _client_of(url: str, document: Any, now: Any) -> OAuthClient | None:
    if not isinstance(document, dict) or document.get("client_id") != url:
        return None
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= 5 or any(redirect_problem(uri) for uri in uris):
        return None
    if document.get("token_endpoint_auth_method", "none") != "none":
        return None  # a public client: no secret is ever shared with a document
    grants = document.get("grant_types", ["authorization_code"])
    if (
        not isinstance(grants, list)
        or not set(grants) <= set(GRANT_TYPES)
        or "authorization_code" not in grants
    ):
        return None
    scope = document.get("scope") if isinstance(document.get("scope"), str) else " ".join(DEFAULT_SCOPES)
    name = document.get("client_name") if isinstance(document.get("client_name"), str) else url
    return OAuthClient(
        client_id=url,
        client_name=name[:200],
        redirect_uris=list(uris),
        token_endpoint_auth_method="none",
        grant_types=list(grants),
        scope=" ".join(s for s in scope.split() if s in SCOPES),
        secret_digest=None,
        created_at=now,
    )
