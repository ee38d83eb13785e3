"""The app-scoped services every capability may use, built once at start and closed at stop."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent_server.foundation.clock import Clock, SystemClock
from agent_server.foundation.events import EventBus
from agent_server.foundation.settings import Settings
from agent_server.foundation.tls import public_ca_context
from agent_server.knowledge.pack import load_pack, shipped_content_dir
from agent_server.knowledge.search import Knowledge
from agent_server.knowledge.weather import OpenMeteoWeather, SandboxWeather, WeatherProvider
from agent_server.llm.mock import MockBackend
from agent_server.llm.router import build_router
from agent_server.llm.types import LLMBackend
from agent_server.storage.db import Database
from agent_server.storage.kv import KV, MemoryKV, RedisKV


@dataclass
class Services:
    settings: Settings
    knowledge: Knowledge
    llm: LLMBackend
    kv: KV
    db: Database
    clock: Clock = field(default_factory=SystemClock)
    # sk_test_ keys always go to this deterministic mock, whatever ``llm`` routes to.
    sandbox_llm: LLMBackend = field(default_factory=MockBackend)
    events: EventBus = field(default_factory=EventBus)
    # Later layers (gateway, jobs, webhooks) hang their own objects here by name.
    extras: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def http(self) -> httpx.AsyncClient:
        """The client for outbound calls to public HTTPS services (the weather provider, the breach
        range API), built at its first use: its CA bundle holds ~1 MB that a process which never
        calls out does not carry."""
        return httpx.AsyncClient(
            timeout=httpx.Timeout(10.0, connect=3.0), follow_redirects=False, verify=public_ca_context()
        )

    @functools.cached_property
    def weather(self) -> WeatherProvider:
        if self.settings.weather_provider == "open_meteo":
            return OpenMeteoWeather(
                self.http, self.settings.weather_base_url, self.settings.geocoding_base_url
            )
        return SandboxWeather()


def build_services(settings: Settings, clock: Clock | None = None) -> Services:
    """Build every service from settings; the choice of backends happens here and only here.

    Nothing here does network I/O: connections open lazily, so this runs inside ``create_app``.
    """
    clock = clock or SystemClock()
    kv: KV = (
        RedisKV(settings.redis_url, timeout=settings.redis_timeout_seconds, prefix=settings.kv_prefix)
        if settings.redis_url
        else MemoryKV(clock)
    )
    knowledge = Knowledge(lambda: load_pack(shipped_content_dir(), settings.content_dir))
    db = Database(settings)
    # The router is services.llm: the catalogue seeds the routing table (mock models, sandbox).
    llm = build_router(settings, db, clock, lambda: [(m.id, m.vendor) for m in knowledge.pack.models])
    return Services(settings, knowledge, llm, kv, db, clock)


async def close_services(services: Services) -> None:
    if "http" in vars(services):  # built only if something called out
        await services.http.aclose()
    close_llm = getattr(services.llm, "aclose", None)  # the router closes its upstream pools
    if close_llm is not None:
        await close_llm()
    await services.kv.close()
    await services.db.dispose()
