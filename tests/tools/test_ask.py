"""ask_agentgate routes: a confident FAQ match, a weather question, else the model with sources."""

from __future__ import annotations

import pytest

from agent_server.foundation.errors import NotFound
from agent_server.knowledge.ask import weather_place
from agent_server.knowledge.weather import WeatherReport
from tests.tools.conftest import Call


@pytest.mark.parametrize(
    ("question", "faq_id"),
    [
        ("I lost my API key. Can you show it to me again?", "api-key-shown-once"),
        ("Which plans do you offer and what do they cost?", "plans-overview"),
        ("How do I verify webhook signatures?", "webhooks"),
        ("Where is my data stored?", "data-residency"),
    ],
)
async def test_faq_question_is_answered_from_the_faq(
    call: Call, services, question: str, faq_id: str
) -> None:
    answer = (await call("ask_agentgate", {"query": question})).model_dump()
    entry = next(e for e in services.knowledge.pack.faq if e.id == faq_id)
    assert answer["route"] == "faq"
    assert answer["answer"] == entry.answer
    assert [s["id"] for s in answer["sources"]] == [faq_id]
    assert answer["sources"][0]["kind"] == "faq" and answer["sources"][0]["score"] > 0
    assert answer["weather"] is None


async def test_weather_question_uses_the_weather_tool(call: Call) -> None:
    answer = (await call("ask_agentgate", {"query": "What's the weather in Paris?"})).model_dump()
    direct = (await call("get_weather", {"location": "Paris"})).model_dump()
    assert answer["route"] == "weather"
    assert answer["weather"] == direct  # the same report the tool gives
    assert "Paris" in answer["answer"] and direct["condition"] in answer["answer"]
    assert answer["sources"] == [
        {"id": "weather:Paris", "title": "Weather in Paris", "score": None, "kind": "weather"}
    ]


async def test_weather_question_without_a_place_uses_the_company_city(call: Call, services) -> None:
    answer = (await call("ask_agentgate", {"query": "Is it going to rain?"})).model_dump()
    assert answer["route"] == "weather"
    assert answer["weather"]["location"] == services.knowledge.pack.company.headquarters.city


async def test_unrelated_question_goes_to_the_model_with_sources(call: Call) -> None:
    answer = (
        await call("ask_agentgate", {"query": "Can you recommend a good novel about penguins?"})
    ).model_dump()
    assert answer["route"] == "llm"
    assert answer["answer"] and "penguins" in answer["answer"]  # the sandbox model quotes the question
    assert answer["sources"], "the llm route names the passages it was given"
    assert {s["kind"] for s in answer["sources"]} <= {"faq", "kb"}
    assert answer["weather"] is None


async def test_ask_is_deterministic_in_the_sandbox(call: Call) -> None:
    query = {"query": "Tell me something about sovereign AI infrastructure"}
    assert await call("ask_agentgate", query) == await call("ask_agentgate", query)


async def test_unknown_place_is_an_answer_not_an_error(call: Call, services) -> None:
    class Nowhere:
        async def current(self, location: str) -> WeatherReport:
            raise NotFound(f"No place called '{location}' was found.", param="location")

    services.weather = Nowhere()
    answer = (await call("ask_agentgate", {"query": "What's the weather in Atlantis?"})).model_dump()
    assert answer["route"] == "weather" and "Atlantis" in answer["answer"] and answer["weather"] is None


@pytest.mark.parametrize(
    ("question", "place"),
    [
        ("What's the weather in Paris?", "Paris"),
        ("Is it raining in new york?", "new york"),
        ("Is it cold in Berlin today?", "Berlin"),
        ("weather forecast for tomorrow in Rome, please", "Rome"),
        ("What is the temperature in Paris, France right now?", "Paris, France"),
        ("How windy is it?", "HOME"),
        ("What are the rate limits?", None),
    ],
)
def test_weather_place_extraction(question: str, place: str | None) -> None:
    assert weather_place(question, "HOME") == place
