"""The response cache: exact repeats of a request answered from a store (off unless turned on).

An entry is keyed by the tenant, the key's environment (a sandbox answer never serves a live key),
the usage endpoint (``chat``, ``embeddings``, ``v2.chat``) and a SHA-256 of the canonical request
body: every field, keys sorted, the model included; the API key is never part of it, so the keys of
one tenant share entries and two tenants never do. Only what repeats exactly is cached: embeddings,
and non-streaming chat completions with one choice and ``temperature: 0`` (with
``AGENTGATE_RESPONSE_CACHE_SAMPLED``, also ``n > 1`` and any temperature). Streams never are.

A hit is admitted, rate-limited and entitled like any request (a key that lost the model gets no
cached answer) and recorded as a usage row with backend ``cache`` and no tokens: it costs nothing
upstream and spends no token quota or budget. The store is Redis when AGENTGATE_REDIS_URL is set
(shared by every process; bounded by the TTL and Redis's own memory policy), else an LRU in the
process bounded in bytes. A failing store is skipped: the request goes upstream.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from typing import Protocol

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError
from agent_server.foundation.settings import Settings
from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.relay import Exchange, Streamed
from agent_server.llm.types import CHAT, EMBEDDINGS, Answer, Call, Usage
from agent_server.storage.kv import KV, RedisKV

log = logging.getLogger("agentgate.gateway")
CACHE_BACKEND = "cache"  # the usage row's backend of a hit
HIT, MISS, BYPASS = "hit", "miss", "bypass"
_NO_TOKENS = Usage(0, 0)


class Store(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None: ...


class MemoryStore:
    """Least recently used first out, at most ``max_bytes`` of answers; expired entries go when read."""

    def __init__(self, clock: Clock, max_bytes: int) -> None:
        self._clock, self._max = clock, max_bytes
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self.size = 0

    async def get(self, key: str) -> bytes | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock.now():
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry[1]

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        self._drop(key)
        self._entries[key] = (self._clock.now() + (ttl or 0.0), value)
        self.size += len(value)
        while self.size > self._max:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.size -= len(entry[1])


class ResponseCache:
    def __init__(self, store: Store, *, ttl: float, max_entry_bytes: int, sampled: bool = False) -> None:
        self.store, self.ttl, self._max_entry, self._sampled = store, ttl, max_entry_bytes, sampled

    @classmethod
    def from_settings(cls, settings: Settings, kv: KV, clock: Clock) -> ResponseCache | None:
        """The app's cache, or None when the setting is off."""
        if not settings.response_cache:
            return None
        shared = isinstance(kv, RedisKV)
        store: Store = kv if shared else MemoryStore(clock, settings.response_cache_max_bytes)
        return cls(
            store,
            ttl=settings.response_cache_ttl_seconds,
            max_entry_bytes=settings.response_cache_max_entry_bytes,
            sampled=settings.response_cache_sampled,
        )

    def cacheable(self, call: Call) -> bool:
        if call.stream:
            return False
        if call.endpoint == EMBEDDINGS:
            return True
        if call.endpoint != CHAT:
            return False
        body = call.body
        return self._sampled or (body.get("n") in (None, 1) and body.get("temperature") == 0)

    def key_for(self, principal: KeyPrincipal, endpoint: str, call: Call) -> str | None:
        """The entry of this request, or None when it is not to be cached."""
        if not self.cacheable(call):
            return None
        canonical = json.dumps(call.body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        return f"response-cache:{principal.tenant_id}:{principal.environment}:{endpoint}:{digest}"

    async def get(self, key: str) -> bytes | None:
        try:
            return await self.store.get(key)
        except Exception as exc:  # the cache is an optimisation: without it, the upstream answers
            log.warning("response cache unavailable (%s); asking the upstream", type(exc).__name__)
            return None

    async def put(self, key: str, body: bytes) -> None:
        if len(body) > self._max_entry:
            return
        try:
            await self.store.set(key, body, ttl=self.ttl)
        except Exception as exc:
            log.warning("response cache unavailable (%s); answer not stored", type(exc).__name__)


async def run_cached(
    exchange: Exchange, cache: ResponseCache, call: Call, *, feature: str | None, bypass: bool
) -> tuple[Answer | Streamed, str]:
    """``exchange.run(call)``, or the stored answer of the same request; and hit, miss or bypass."""
    key = None if bypass else cache.key_for(exchange.caller.principal, exchange.endpoint, call)
    if key is None:
        return await exchange.run(call, feature=feature), BYPASS
    exchange.model, exchange.call = call.model, call
    try:  # what the plan and key allow is checked before a stored answer is given
        exchange.gateway.entitle(exchange.caller, call.model, stream=False, feature=feature)
    except AgentError as err:
        raise await exchange.refuse(err) from None
    body = await cache.get(key)
    if body is not None:
        exchange.backend = CACHE_BACKEND
        await exchange.record(200, said=body)  # no tokens: no upstream cost, no quota or budget spent
        return Answer(body, {}, _NO_TOKENS), HIT
    answer = await exchange.run(call, feature=feature)
    await cache.put(key, answer.body)  # type: ignore[union-attr]  # not a stream: an Answer
    return answer, MISS
