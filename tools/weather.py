from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.knowledge.weather import WeatherReport


@tool(title="Current weather", open_world=True, timeout=15)
async def get_weather(
    ctx: ToolContext,
    location: Annotated[
        str, Field(min_length=1, max_length=120, description="A city or place name, e.g. Berlin.")
    ],
) -> WeatherReport:
    """Get the current weather (condition, temperature in °C, wind in km/h) for a place.

    In the sandbox the figures are simulated but repeatable; the result's ``source`` says which.
    """
    return await ctx.services.weather.current(location)
