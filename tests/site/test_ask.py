"""/api/ask.php end to end: the three routes, the SSE event order, the description, headers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.types import ChatRequest, Completion, Delta
from tests.site.conftest import assert_envelope, parse_sse, site_of

ASK = "/api/ask.php"
STREAM = {"Prefer": "streaming", "Accept": "text/event-stream"}
QUESTIONS = {
    "faq": "How do I rotate my API key?",
    "weather": "What is the weather in Berlin?",
    "llm": "What would you recommend for a small startup team?",
}


async def test_ask_answers_with_route_and_sources(web: httpx.AsyncClient) -> None:
    for route in QUESTIONS:
        response = await web.post(ASK, json={"query": QUESTIONS[route]})
        assert response.status_code == 200, response.text
        assert response.headers["NLWeb-Version"] == "0.1"
        answer = response.json()
        assert answer["route"] == route and answer["answer"] and answer["sources"]
        assert answer["query"] == QUESTIONS[route]
        if route == "weather":
            assert answer["weather"]["location"] == "Berlin"


async def test_streamed_events_come_in_order_and_match_the_plain_answer(web: httpx.AsyncClient) -> None:
    for route in QUESTIONS:
        plain = (await web.post(ASK, json={"query": QUESTIONS[route]})).json()
        response = await web.post(ASK, json={"query": QUESTIONS[route]}, headers=STREAM)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert (
            response.headers["NLWeb-Version"] == "0.1" and response.headers["RateLimit-Limit"] == "60;w=3600"
        )
        events = parse_sse(response.text)
        names = [name for name, _ in events]
        assert names[0] == "start" and names[-2:] == ["result", "complete"]
        assert set(names[1:-2]) == {"token"} and len(names) - 3 >= 2, names
        start, result, complete = events[0][1], events[-2][1], events[-1][1]
        assert start["route"] == route and start["query_id"] == result["query_id"] == complete["query_id"]
        assert complete["status"] == "ok"
        assert "".join(data["text"] for name, data in events if name == "token") == result["answer"]
        result.pop("query_id")
        assert result == plain


async def test_streaming_needs_both_headers(web: httpx.AsyncClient) -> None:
    only_accept = await web.post(
        ASK, json={"query": QUESTIONS["faq"]}, headers={"Accept": "text/event-stream"}
    )
    assert only_accept.headers["content-type"].startswith("application/json")


async def test_get_describes_the_endpoint(web: httpx.AsyncClient) -> None:
    response = await web.get(ASK)
    assert response.status_code == 200 and response.headers["NLWeb-Version"] == "0.1"
    description = response.json()
    assert description["method"] == "POST" and description["request_schema"]["required"] == ["query"]
    assert "route" in description["response_schema"]["properties"]
    assert description["streaming"]["events"] == ["start", "token", "result", "complete"]
    assert description["streaming"]["request_headers"] == {
        "Prefer": "streaming",
        "Accept": "text/event-stream",
    }
    assert len(description["examples"]) == 3
    assert description["limits"]["RateLimit-Policy"] == '"default";q=60;w=3600'


async def test_invalid_query_is_a_400_with_the_nlweb_header(web: httpx.AsyncClient) -> None:
    response = await web.post(ASK, json={"query": ""})
    assert assert_envelope(response, 400, "VALIDATION_ERROR")["param"] == "query"
    assert response.headers["NLWeb-Version"] == "0.1"
    assert_envelope(await web.post(ASK, json={"question": "x"}), 400, "VALIDATION_ERROR")
    assert_envelope(
        await web.post(ASK, content=b"{not json", headers={"Content-Type": "application/json"}),
        400,
        "INVALID_JSON",
    )


class BreaksMidStream:
    """A model that sends one piece and then fails, like an upstream that drops the connection."""

    name = "breaks"

    async def complete(self, request: ChatRequest) -> Completion:
        raise UpstreamFailed("The model upstream failed.")

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        yield Delta("Partial ")
        raise UpstreamFailed("The model upstream closed the stream.")


async def test_a_failure_after_the_first_token_is_an_error_event(
    web: httpx.AsyncClient, site_app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_of(site_app).llm, "backend", BreaksMidStream)
    response = await web.post(ASK, json={"query": QUESTIONS["llm"]}, headers=STREAM)
    assert response.status_code == 200
    events = parse_sse(response.text)
    assert [name for name, _ in events] == ["start", "token", "error", "complete"]
    assert events[2][1]["error"]["code"] == "UPSTREAM_ERROR" and events[3][1]["status"] == "error"
    plain = await web.post(ASK, json={"query": QUESTIONS["llm"]})
    assert_envelope(plain, 502, "UPSTREAM_ERROR")
