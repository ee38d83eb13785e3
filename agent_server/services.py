"""The app-scoped services every capability may use, built once at start and closed at stop."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agent_server.foundation.clock import Clock, SystemClock
from agent_server.foundation.events import EventBus
from agent_server.foundation.settings import Settings
from agent_server.foundation.tls import public_ca_context
from agent_server.knowledge.pack import load_pack
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
    weather: WeatherProvider
    llm: LLMBackend
    kv: KV
    db: Database
    http: httpx.AsyncClient
    clock: Clock = field(default_factory=SystemClock)
    # sk_test_ keys always go to this deterministic mock, whatever ``llm`` routes to.
    sandbox_llm: LLMBackend = field(default_factory=MockBackend)
    events: EventBus = field(default_factory=EventBus)
    # Later layers (gateway, jobs, webhooks) hang their own objects here by name.
    extras: dict[str, Any] = field(default_factory=dict)


def shipped_content_dir() -> Path:
    import resources

    return Path(resources.__file__).parent / "content"


def build_services(settings: Settings, clock: Clock | None = None) -> Services:
    """Build every service from settings; the choice of backends happens here and only here.

    Nothing here does network I/O: connections open lazily, so this runs inside ``create_app``.
    """
    clock = clock or SystemClock()
    http = httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, connect=3.0), follow_redirects=False, verify=public_ca_context()
    )
    kv: KV = (
        RedisKV(settings.redis_url, timeout=settings.redis_timeout_seconds, prefix=settings.kv_prefix)
        if settings.redis_url
        else MemoryKV(clock)
    )
    weather: WeatherProvider = (
        OpenMeteoWeather(http, settings.weather_base_url, settings.geocoding_base_url)
        if settings.weather_provider == "open_meteo"
        else SandboxWeather()
    )
    knowledge = Knowledge(lambda: load_pack(shipped_content_dir(), settings.content_dir))
    db = Database(settings)
    # The router is services.llm: the catalogue seeds the routing table (mock models, sandbox).
    llm = build_router(settings, db, clock, lambda: [(m.id, m.vendor) for m in knowledge.pack.models])
    return Services(settings, knowledge, weather, llm, kv, db, http, clock)


async def close_services(services: Services) -> None:
    await services.http.aclose()
    close_llm = getattr(services.llm, "aclose", None)  # the router closes its upstream pools
    if close_llm is not None:
        await close_llm()
    await services.kv.close()
    await services.db.dispose()
