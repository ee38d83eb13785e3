"""get_weather: the sandbox provider, and the Open-Meteo provider against a real HTTP server on loopback."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agent_server.foundation.errors import NotFound, UpstreamFailed
from agent_server.knowledge.weather import OpenMeteoWeather, SandboxWeather, WeatherReport
from tests.conftest import BASE_URL, free_port, running
from tests.tools.conftest import Call, FakeOpenMeteo


async def test_sandbox_weather_is_deterministic(call: Call) -> None:
    first = await call("get_weather", {"location": "Berlin"})
    again = await call("get_weather", {"location": "  berlin "})
    assert first == again  # same place, however it is written: same report
    assert isinstance(first, WeatherReport) and first.source == "sandbox" and first.location == "Berlin"
    assert -10 <= first.temperature_c <= 30 and 0 <= first.wind_speed_kmh <= 60
    assert -90 <= first.latitude <= 90 and -180 <= first.longitude <= 180
    assert first.condition


async def test_sandbox_weather_differs_between_places() -> None:
    sandbox = SandboxWeather()
    reports = [await sandbox.current(place) for place in ("Berlin", "Paris", "Tokyo", "Lima", "Oslo")]
    assert len({(r.temperature_c, r.wind_speed_kmh, r.latitude) for r in reports}) == 5


async def test_get_weather_needs_a_location(call: Call) -> None:
    from agent_server.foundation.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as raised:
        await call("get_weather", {"location": ""})
    assert raised.value.param == "location"


@pytest.fixture
async def provider(open_meteo: FakeOpenMeteo):
    async with httpx.AsyncClient() as client:
        open_meteo.requests.clear()
        yield OpenMeteoWeather(client, open_meteo.url, open_meteo.url)


async def test_open_meteo_geocodes_then_reads_the_current_weather(
    provider: OpenMeteoWeather, open_meteo: FakeOpenMeteo
) -> None:
    report = await provider.current("Paris")
    assert report == WeatherReport(
        location="Paris, France",
        latitude=48.8534,
        longitude=2.3488,
        temperature_c=17.4,
        wind_speed_kmh=11.2,
        condition="overcast",
        source="open-meteo",
    )
    (first, search), (second, forecast) = open_meteo.requests
    assert (first, search["name"], search["count"]) == ("search", "Paris", "1")
    assert second == "forecast" and (forecast["latitude"], forecast["longitude"]) == ("48.8534", "2.3488")
    assert set(forecast["current"].split(",")) >= {"temperature_2m", "wind_speed_10m", "weather_code"}


async def test_open_meteo_maps_weather_codes_to_words(provider: OpenMeteoWeather) -> None:
    report = await provider.current("Berlin")
    assert (report.condition, report.temperature_c) == ("light snow", -2.5)


async def test_open_meteo_unknown_place_is_not_found(provider: OpenMeteoWeather) -> None:
    with pytest.raises(NotFound) as raised:
        await provider.current("Atlantis")
    assert raised.value.param == "location" and "Atlantis" in raised.value.message


@pytest.mark.parametrize(
    ("place", "says"),
    [
        ("Teapot", "HTTP 500"),  # the geocoder fails
        ("Brokenville", "HTTP 500"),  # the forecast fails
        ("Garbletown", "not JSON"),  # an HTML maintenance page
        ("Shapeshift", "unexpected answer"),  # JSON of another shape
    ],
)
async def test_open_meteo_failures_are_upstream_errors(
    provider: OpenMeteoWeather, place: str, says: str
) -> None:
    with pytest.raises(UpstreamFailed) as raised:
        await provider.current(place)
    assert says in raised.value.message
    assert (raised.value.http_status, raised.value.type, raised.value.retryable) == (
        502,
        "server_error",
        True,
    )


async def test_open_meteo_unreachable_is_an_upstream_error() -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    async with httpx.AsyncClient() as client:
        with pytest.raises(UpstreamFailed, match="unreachable"):
            await OpenMeteoWeather(client, closed, closed).current("Paris")


@pytest.fixture
async def open_meteo_client(tmp_path: Path, open_meteo: FakeOpenMeteo):
    """The real app configured for Open-Meteo at the loopback fake, over ASGI."""
    from agent_server.foundation.settings import Settings
    from http_facade.app import create_app

    settings = Settings(
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        weather_provider="open_meteo",
        weather_base_url=open_meteo.url,
        geocoding_base_url=open_meteo.url,
    )
    open_meteo.requests.clear()
    async with (
        running(create_app(settings)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield client


async def test_setting_switches_get_weather_to_open_meteo(
    open_meteo_client, open_meteo: FakeOpenMeteo
) -> None:
    response = await open_meteo_client.post(
        "/api/tools/call", json={"name": "get_weather", "arguments": {"location": "Paris"}}
    )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert (result["source"], result["location"], result["temperature_c"]) == (
        "open-meteo",
        "Paris, France",
        17.4,
    )
    assert [kind for kind, _ in open_meteo.requests] == ["search", "forecast"]


async def test_open_meteo_errors_over_http_use_the_envelope(open_meteo_client) -> None:
    missing = await open_meteo_client.post(
        "/api/tools/call", json={"name": "get_weather", "arguments": {"location": "Atlantis"}}
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found" and missing.json()["error"]["param"] == "location"

    failing = await open_meteo_client.post(
        "/api/tools/call", json={"name": "get_weather", "arguments": {"location": "Brokenville"}}
    )
    assert failing.status_code == 502
    assert failing.headers["content-type"] == "application/json; charset=utf-8"
    error = failing.json()["error"]
    assert (error["type"], error["code"]) == ("server_error", "UPSTREAM_ERROR")
    assert "HTTP 500" in error["message"]


async def test_ask_about_the_weather_uses_open_meteo_when_configured(open_meteo_client) -> None:
    response = await open_meteo_client.post(
        "/api/tools/call",
        json={"name": "ask_agentgate", "arguments": {"query": "What's the weather in Berlin?"}},
    )
    result = response.json()["result"]
    assert result["route"] == "weather" and result["weather"]["source"] == "open-meteo"
    assert "light snow" in result["answer"]
