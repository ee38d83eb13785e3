"""The outbound HTTPS client is built at its first use: a process that never calls out does not load
the CA bundle (docs/performance.md, "Memory")."""

from __future__ import annotations

from pathlib import Path

import httpx

from agent_server.capabilities.services import build_services, close_services
from agent_server.foundation.settings import Settings
from agent_server.knowledge.weather import OpenMeteoWeather, SandboxWeather


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(data_dir=tmp_path, redis_url=None, database_url=None, **values)


async def test_the_client_is_built_at_first_use_and_closed_with_the_services(tmp_path: Path) -> None:
    services = build_services(_settings(tmp_path))
    assert "http" not in vars(services)
    assert isinstance(services.weather, SandboxWeather)  # the sandbox provider needs no client
    assert "http" not in vars(services)
    client = services.http
    assert isinstance(client, httpx.AsyncClient) and services.http is client  # one per process
    await close_services(services)
    assert client.is_closed


async def test_services_that_never_called_out_close_without_building_it(tmp_path: Path) -> None:
    services = build_services(_settings(tmp_path))
    await close_services(services)
    assert "http" not in vars(services)


async def test_the_open_meteo_provider_calls_out_through_the_shared_client(tmp_path: Path) -> None:
    services = build_services(_settings(tmp_path, weather_provider="open_meteo"))
    assert "http" not in vars(services)  # choosing the provider is not calling it
    weather = services.weather
    assert isinstance(weather, OpenMeteoWeather) and weather.client is services.http
    await close_services(services)
    assert weather.client.is_closed
