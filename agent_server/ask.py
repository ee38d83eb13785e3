"""Answering a natural-language question: FAQ quick path, weather tool, then the LLM with context."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from agent_server.knowledge import Hit, Knowledge
from agent_server.llm.types import ChatMessage, ChatRequest, LLMBackend
from agent_server.weather import WeatherProvider, WeatherReport

# BM25 scores are unbounded; the best FAQ entry answers on its own above this score...
FAQ_CONFIDENT_SCORE = 2.5
# ...and clearly ahead of the runner-up, so a vague question goes on to the model.
FAQ_MARGIN = 1.3
ASK_MODEL = "agentgate-mock-small"
_WEATHER_WORDS = re.compile(
    r"\b(weather|forecast|temperature|raining|rain|snow|snowing|sunny|windy|wind|degrees|celsius|cold|hot)\b",
    re.IGNORECASE,
)
_PLACE = re.compile(r"\b(?:in|at|for|near)\s+([A-Z][\w\-' ]*(?:,\s*[A-Z][\w\- ]*)?)")

Route = Literal["faq", "weather", "llm"]


class Source(BaseModel):
    id: str
    title: str
    score: float | None = None
    kind: Literal["faq", "kb", "weather"] = "faq"


class Answer(BaseModel):
    query: str
    answer: str
    route: Route = Field(description="faq: answered from the FAQ; weather: the weather tool; llm: the model.")
    sources: list[Source] = []
    weather: WeatherReport | None = None


def weather_place(query: str, default: str) -> str | None:
    """The place a weather question asks about, or None when it is no weather question."""
    if not _WEATHER_WORDS.search(query):
        return None
    match = _PLACE.search(query)
    return match.group(1).strip(" ?!.") if match else default


def _sources(hits: list[Hit], kind: Literal["faq", "kb"]) -> list[Source]:
    return [Source(id=h.passage.id, title=h.passage.title, score=h.score, kind=kind) for h in hits]


async def answer(
    query: str, knowledge: Knowledge, weather: WeatherProvider, llm: LLMBackend, home: str
) -> Answer:
    faq = knowledge.search_faq(query, 3)
    runner_up = faq[1].score if len(faq) > 1 else 0.0
    if faq and faq[0].score >= FAQ_CONFIDENT_SCORE and faq[0].score >= FAQ_MARGIN * runner_up:
        return Answer(query=query, answer=faq[0].passage.text, route="faq", sources=_sources(faq[:1], "faq"))
    place = weather_place(query, home)
    if place is not None:
        report = await weather.current(place)
        text = (
            f"The weather in {report.location}: {report.condition}, {report.temperature_c:g} °C, "
            f"wind {report.wind_speed_kmh:g} km/h (source: {report.source})."
        )
        source = Source(
            id=f"weather:{report.location}", title=f"Weather in {report.location}", kind="weather"
        )
        return Answer(query=query, answer=text, route="weather", sources=[source], weather=report)
    kb = knowledge.search_kb(query, 2)
    context = "\n\n".join(f"{h.passage.title}: {h.passage.text}" for h in [*faq[:2], *kb])
    request = ChatRequest(
        model=ASK_MODEL,
        messages=[
            ChatMessage(role="system", content=f"Answer from this context when it helps.\n\n{context}"),
            ChatMessage(role="user", content=query),
        ],
        max_tokens=400,
    )
    completion = await llm.complete(request)
    sources = _sources(faq[:2], "faq") + _sources(kb, "kb")
    return Answer(query=query, answer=completion.content, route="llm", sources=sources)
