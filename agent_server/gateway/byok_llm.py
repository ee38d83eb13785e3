"""Calling a BYOK model with the tenant's own key: an upstream client per (tenant, upstream), built
from the upstream's settings with only the key replaced, so base URL, model ids, timeouts, proxy
and TLS stay the operator's. The router is not involved (it holds the platform's keys), and
nothing in the LLM layer changed for this.

``Gateway.llm_for(principal, model)`` returns such a client for a BYOK model.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from pydantic import SecretStr

from agent_server.foundation.errors import Unavailable
from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.byok import ProviderCredential, missing
from agent_server.gateway.model_table import ModelTable
from agent_server.llm.anthropic_native import upstream_class
from agent_server.llm.openai_compat import OpenAICompatBackend
from agent_server.llm.types import LLMBackend

MAX_CLIENTS = 512  # tenant clients kept; the least recently used is closed beyond that
CLOSE_GRACE_SECONDS = 120.0  # a replaced client is closed this long after, when its calls are over


class ByokClients:
    def __init__(self, settings: Settings, models: ModelTable) -> None:
        self._settings, self._models = settings, models
        self._upstreams = {u.name: u for u in settings.upstreams}
        self._clients: OrderedDict[tuple[str, str], tuple[int, OpenAICompatBackend]] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()

    def for_model(self, principal: KeyPrincipal, model: str) -> LLMBackend | None:
        """The tenant's client for a BYOK model (402 without its key); None for other models."""
        provider = self._models.byok.get(model)
        if provider is None:
            return None
        credential = principal.byok.get(provider)
        if credential is None:
            raise missing(provider, model)
        return self._client(principal.tenant_id, model, provider, credential)

    def _client(
        self, tenant_id: str, model: str, provider: str, credential: ProviderCredential
    ) -> LLMBackend:
        upstream = self._models.entries[model].byok_upstream
        if upstream is None:
            raise Unavailable(f"No upstream is configured for the provider '{provider}'.", retry_after=60)
        slot = (tenant_id, upstream)
        cached = self._clients.get(slot)
        if cached is not None and cached[0] == credential.version:
            self._clients.move_to_end(slot)
            return cached[1]
        client = self._build(self._upstreams[upstream], credential.secret)
        self._clients[slot] = (credential.version, client)
        if cached is not None:
            self._close_later(cached[1])
        if len(self._clients) > MAX_CLIENTS:
            self._close_later(self._clients.popitem(last=False)[1][1])
        return client

    def _build(self, upstream: UpstreamConfig, secret: str) -> OpenAICompatBackend:
        settings = self._settings
        return upstream_class(upstream)(
            upstream.model_copy(update={"api_key": SecretStr(secret)}),
            connect_timeout=settings.llm_connect_timeout_seconds,
            read_timeout=settings.llm_read_timeout_seconds,
            retries=settings.llm_retries,
            backoff=settings.llm_retry_backoff_seconds,
            max_connections=settings.llm_max_connections,
            transport_kind=settings.llm_http_transport,
        )

    def _close_later(self, client: OpenAICompatBackend) -> None:
        async def close() -> None:
            await asyncio.sleep(CLOSE_GRACE_SECONDS)
            await client.aclose()

        task = asyncio.get_running_loop().create_task(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        for task in list(self._closing):
            task.cancel()
        for _, client in self._clients.values():
            await client.aclose()
        self._clients.clear()
