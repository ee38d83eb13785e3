"""Weather behind one interface: a deterministic sandbox provider and an Open-Meteo-compatible one."""

from __future__ import annotations

import hashlib
from typing import Protocol

import httpx
from pydantic import BaseModel, Field

from agent_server.foundation.errors import NotFound, UpstreamFailed

# WMO weather interpretation codes (the ones Open-Meteo reports), reduced to words.
_CONDITIONS = {
    0: "clear sky",
    1: "mainly clear",
    2: "partly cloudy",
    3: "overcast",
    45: "fog",
    48: "rime fog",
    51: "light drizzle",
    53: "drizzle",
    55: "dense drizzle",
    61: "light rain",
    63: "rain",
    65: "heavy rain",
    71: "light snow",
    73: "snow",
    75: "heavy snow",
    80: "rain showers",
    81: "rain showers",
    82: "violent rain showers",
    95: "thunderstorm",
    96: "thunderstorm with hail",
    99: "thunderstorm with hail",
}


class WeatherReport(BaseModel):
    location: str = Field(description="Resolved place name.")
    latitude: float
    longitude: float
    temperature_c: float
    wind_speed_kmh: float
    condition: str
    source: str = Field(description="'sandbox' for simulated data, else the provider's name.")


class WeatherProvider(Protocol):
    async def current(self, location: str) -> WeatherReport: ...


class SandboxWeather:
    """Plausible, repeatable weather for any place name, without the network."""

    async def current(self, location: str) -> WeatherReport:
        digest = hashlib.sha256(location.strip().lower().encode()).digest()
        codes = sorted(_CONDITIONS)
        return WeatherReport(
            location=location.strip().title(),
            latitude=round(digest[0] / 255 * 180 - 90, 2),
            longitude=round(digest[1] / 255 * 360 - 180, 2),
            temperature_c=round(digest[2] / 255 * 40 - 10, 1),
            wind_speed_kmh=round(digest[3] / 255 * 60, 1),
            condition=_CONDITIONS[codes[digest[4] % len(codes)]],
            source="sandbox",
        )


class OpenMeteoWeather:
    """Geocodes the place, then reads the current conditions, over two pooled HTTP calls."""

    def __init__(self, client: httpx.AsyncClient, forecast_url: str, geocoding_url: str) -> None:
        self.client = client
        self.forecast_url = forecast_url.rstrip("/")
        self.geocoding_url = geocoding_url.rstrip("/")

    async def current(self, location: str) -> WeatherReport:
        try:
            places = await self._get(f"{self.geocoding_url}/v1/search", {"name": location, "count": 1})
            if not places.get("results"):
                raise NotFound(f"No place called '{location}' was found.", param="location")
            place = places["results"][0]
            data = await self._get(
                f"{self.forecast_url}/v1/forecast",
                {
                    "latitude": place["latitude"],
                    "longitude": place["longitude"],
                    "current": "temperature_2m,wind_speed_10m,weather_code",
                },
            )
            now = data["current"]
            return WeatherReport(
                location=", ".join(p for p in (place.get("name"), place.get("country")) if p),
                latitude=place["latitude"],
                longitude=place["longitude"],
                temperature_c=now["temperature_2m"],
                wind_speed_kmh=now["wind_speed_10m"],
                condition=_CONDITIONS.get(int(now.get("weather_code", -1)), "unknown"),
                source="open-meteo",
            )
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # a provider that changed its format is an upstream failure, never a crash of ours
            raise UpstreamFailed(
                f"The weather provider sent an unexpected answer ({type(exc).__name__}: {exc})."
            ) from None

    async def _get(self, url: str, params: dict[str, object]) -> dict:
        try:
            response = await self.client.get(url, params=params, timeout=5.0)
        except httpx.HTTPError as exc:
            raise UpstreamFailed(f"The weather provider is unreachable ({type(exc).__name__}).") from None
        if response.status_code != 200:
            raise UpstreamFailed(f"The weather provider answered HTTP {response.status_code}.")
        try:
            data = response.json()
        except ValueError:
            raise UpstreamFailed("The weather provider answered with something that is not JSON.") from None
        if not isinstance(data, dict):
            raise UpstreamFailed("The weather provider answered with JSON that is not an object.")
        return data
