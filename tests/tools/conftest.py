"""Fixtures of the tool tests: real services, a tool caller, and a fake Open-Meteo on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.services import Services, build_services, close_services
from agent_server.foundation.settings import Settings
from tests.conftest import free_port
from tools import build_registry

Call = Callable[[str, dict[str, Any]], Awaitable[BaseModel]]

# The places the fake geocoder knows. Some trigger failures of the forecast endpoint.
PLACES = {
    "paris": {"name": "Paris", "country": "France", "latitude": 48.8534, "longitude": 2.3488},
    "berlin": {"name": "Berlin", "country": "Germany", "latitude": 52.5244, "longitude": 13.4105},
    "brokenville": {"name": "Brokenville", "country": "Nowhere", "latitude": 1.0, "longitude": 1.0},
    "garbletown": {"name": "Garbletown", "country": "Nowhere", "latitude": 2.0, "longitude": 2.0},
    "shapeshift": {"name": "Shapeshift", "country": "Nowhere", "latitude": 3.0, "longitude": 3.0},
}
FORECASTS = {
    (48.8534, 2.3488): {"temperature_2m": 17.4, "wind_speed_10m": 11.2, "weather_code": 3},
    (52.5244, 13.4105): {"temperature_2m": -2.5, "wind_speed_10m": 25.0, "weather_code": 71},
}


class FakeOpenMeteo:
    """Open-Meteo's geocoding (/v1/search) and forecast (/v1/forecast) APIs, served by uvicorn."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        app = Starlette(routes=[Route("/v1/search", self.search), Route("/v1/forecast", self.forecast)])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def search(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.requests.append(("search", params))
        name = params.get("name", "").strip().lower()
        if name == "teapot":
            return PlainTextResponse("geocoder exploded", status_code=500)
        place = PLACES.get(name)
        # like the real API: no "results" key at all when nothing matches
        return JSONResponse({"results": [place]} if place else {"generationtime_ms": 0.2})

    async def forecast(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.requests.append(("forecast", params))
        lat, lon = float(params["latitude"]), float(params["longitude"])
        if (lat, lon) == (1.0, 1.0):
            return JSONResponse({"error": True, "reason": "internal"}, status_code=500)
        if (lat, lon) == (2.0, 2.0):
            return PlainTextResponse("<html>maintenance</html>")
        if (lat, lon) == (3.0, 3.0):
            return JSONResponse({"current": {"temperature": "warm"}})
        return JSONResponse({"latitude": lat, "longitude": lon, "current": FORECASTS[(lat, lon)]})

    def __enter__(self) -> FakeOpenMeteo:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("fake Open-Meteo did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def open_meteo() -> Iterator[FakeOpenMeteo]:
    with FakeOpenMeteo() as fake:
        yield fake


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    built = build_services(Settings(data_dir=tmp_path, redis_url=None, database_url=None))
    try:
        yield built
    finally:
        await close_services(built)


@pytest.fixture
def call(services: Services) -> Call:
    """Invoke a tool the way every surface does: through ``Registry.invoke``."""
    registry = build_registry(services.settings)

    async def invoke(name: str, arguments: dict[str, Any]) -> BaseModel:
        return await registry.invoke(name, arguments, ToolContext(services, surface="test"))

    return invoke
