"""Answering a natural-language question: FAQ quick path, weather tool, then the LLM with context."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from agent_server.foundation.errors import NotFound
from agent_server.knowledge.search import Hit, Knowledge
from agent_server.knowledge.weather import WeatherProvider, WeatherReport
from agent_server.llm.types import ChatMessage, ChatRequest, LLMBackend

# BM25 scores (SQLite FTS5) are unbounded; the best FAQ entry answers on its own above this score
# (one rare word alone scores up to about 6, a question worded like an entry's own usually 7 to 25)...
FAQ_CONFIDENT_SCORE = 6.0
# ...and clearly ahead of the runner-up, so a vague question goes on to the model.
FAQ_MARGIN = 1.27
ASK_MODEL = "agentgate-mock-small"
_WEATHER_WORDS = re.compile(
    r"\b(weather|forecast|temperature|raining|rain|snow|snowing|sunny|windy|wind|degrees|celsius|cold|hot)\b",
    re.IGNORECASE,
)
# The words after "in/at/for/near" up to the end of the clause; a lookahead, so matches may overlap
# ("weather for tomorrow in Paris" yields "tomorrow in Paris" and "Paris").
_PLACE = re.compile(r"\b(?:in|at|for|near)\s+(?=([^?!.;:]+))", re.IGNORECASE)
# Words that end a place name: times and fillers ("in Berlin today", "in Rome right now").
_NOT_PLACE = {"today", "tomorrow", "tonight", "now", "right", "currently", "this", "next", "please", "like"}
_PREPOSITIONS = {"in", "at", "for", "near"}

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
    for match in _PLACE.finditer(query):
        words: list[str] = []
        for word in match.group(1).split():
            if word.lower().strip(",'") in _NOT_PLACE | _PREPOSITIONS:
                break
            words.append(word)
        place = " ".join(words).strip(" ,'\"")
        if place:
            return place
    return default


def _sources(hits: list[Hit], kind: Literal["faq", "kb"]) -> list[Source]:
    return [Source(id=h.passage.id, title=h.passage.title, score=h.score, kind=kind) for h in hits]


@dataclass(frozen=True)
class Plan:
    """The routing decision for one question, shared by the plain and the streaming answer."""

    route: Route
    faq: list[Hit]
    place: str | None = None


def plan(query: str, knowledge: Knowledge, home: str) -> Plan:
    """Decide the route without side effects: confident FAQ hit, weather question, else the model."""
    faq = knowledge.search_faq(query, 3)
    runner_up = faq[1].score if len(faq) > 1 else 0.0
    if faq and faq[0].score >= FAQ_CONFIDENT_SCORE and faq[0].score >= FAQ_MARGIN * runner_up:
        return Plan("faq", faq)
    place = weather_place(query, home)
    if place is not None:
        return Plan("weather", faq, place)
    return Plan("llm", faq)


def faq_answer(query: str, p: Plan) -> Answer:
    return Answer(query=query, answer=p.faq[0].passage.text, route="faq", sources=_sources(p.faq[:1], "faq"))


async def weather_answer(query: str, place: str, weather: WeatherProvider) -> Answer:
    try:
        report = await weather.current(place)
    except NotFound:  # an answer, not an error: the question was understood, the place was not
        text = f"I could not find a place called '{place}'. Please name a city, e.g. 'weather in Paris'."
        return Answer(query=query, answer=text, route="weather")
    text = (
        f"The weather in {report.location}: {report.condition}, {report.temperature_c:g} °C, "
        f"wind {report.wind_speed_kmh:g} km/h (source: {report.source})."
    )
    source = Source(id=f"weather:{report.location}", title=f"Weather in {report.location}", kind="weather")
    return Answer(query=query, answer=text, route="weather", sources=[source], weather=report)


def llm_request(query: str, p: Plan, knowledge: Knowledge) -> tuple[ChatRequest, list[Source]]:
    """The model request of the llm route, with the passages it was given as sources."""
    kb = knowledge.search_kb(query, 2)
    context = "\n\n".join(f"{h.passage.title}: {h.passage.text}" for h in [*p.faq[:2], *kb])
    request = ChatRequest(
        model=ASK_MODEL,
        messages=[
            ChatMessage(role="system", content=f"Answer from this context when it helps.\n\n{context}"),
            ChatMessage(role="user", content=query),
        ],
        max_tokens=400,
    )
    return request, _sources(p.faq[:2], "faq") + _sources(kb, "kb")


async def answer(
    query: str, knowledge: Knowledge, weather: WeatherProvider, llm: LLMBackend, home: str
) -> Answer:
    p = plan(query, knowledge, home)
    if p.route == "faq":
        return faq_answer(query, p)
    if p.route == "weather" and p.place is not None:
        return await weather_answer(query, p.place, weather)
    request, sources = llm_request(query, p, knowledge)
    completion = await llm.complete(request)
    return Answer(query=query, answer=completion.content, route="llm", sources=sources)
