"""Per-IP limits (GCRA) are exact under concurrency, in memory and on a real Redis; the RateLimit
headers follow spec 8; the site's own model budget refuses the llm route only."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from tests.site.conftest import ClientFactory, assert_envelope
from tests.site.test_ask import ASK, QUESTIONS, STREAM
from tests.site.test_chat import chat, get_token

BACKENDS = pytest.mark.parametrize("backend", ["memory", "redis"], indirect=True)


def statuses(responses: list[httpx.Response]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for response in responses:
        counts[response.status_code] = counts.get(response.status_code, 0) + 1
    return counts


@BACKENDS
async def test_100_concurrent_chat_messages_from_one_ip_admit_exactly_20(
    client_for: ClientFactory, clock: ManualClock
) -> None:
    client = client_for("10.0.0.1")
    token = await get_token(client)
    clock.advance(4)
    responses = await asyncio.gather(*(chat(client, token) for _ in range(100)))
    assert statuses(responses) == {200: 20, 429: 80}
    refused = next(r for r in responses if r.status_code == 429)
    assert "next_steps" in refused.json()["error"] and int(refused.headers["Retry-After"]) > 0
    other = client_for("10.0.0.2")  # another IP has its own window
    other_token = await get_token(other)
    clock.advance(4)
    assert (await chat(other, other_token)).status_code == 200


@BACKENDS
async def test_100_concurrent_asks_from_one_ip_admit_exactly_60(client_for: ClientFactory) -> None:
    client = client_for("10.0.0.3")
    responses = await asyncio.gather(
        *(client.post(ASK, json={"query": QUESTIONS["faq"]}) for _ in range(100))
    )
    assert statuses(responses) == {200: 60, 429: 40}
    remaining = sorted(int(r.headers["RateLimit-Remaining"]) for r in responses if r.status_code == 200)
    assert remaining == list(range(60))  # every admitted request saw a distinct count
    refused = next(r for r in responses if r.status_code == 429)
    error = assert_envelope(refused, 429, "RATE_LIMIT_EXCEEDED")
    # 60 per hour: the next ask is due one interval (60 s) later, the whole allowance an hour later.
    assert error["retry_after"] == int(refused.headers["Retry-After"]) == 60
    assert refused.headers["RateLimit-Reset"] == "3600" and refused.headers["RateLimit-Remaining"] == "0"
    assert refused.headers["NLWeb-Version"] == "0.1"


async def test_ratelimit_headers_and_the_refill(web: httpx.AsyncClient, clock: ManualClock) -> None:
    response = await web.post(ASK, json={"query": QUESTIONS["faq"]})
    assert response.headers["RateLimit-Limit"] == "60;w=3600"
    assert response.headers["RateLimit-Policy"] == '"default";q=60;w=3600'
    assert response.headers["RateLimit-Remaining"] == "59"
    assert response.headers["RateLimit-Reset"] == "60"  # one ask is given back every 60 s
    assert "Retry-After" not in response.headers
    clock.advance(30)
    assert (await web.post(ASK, json={"query": QUESTIONS["faq"]})).headers["RateLimit-Reset"] == "90"
    clock.advance(90)
    assert (await web.post(ASK, json={"query": QUESTIONS["faq"]})).headers["RateLimit-Remaining"] == "59"


@pytest.fixture
def tight_budget(configure: dict[str, Any]) -> None:
    configure.update(site_llm_requests_per_minute=2)


@pytest.mark.usefixtures("tight_budget")
async def test_spent_call_budget_refuses_the_llm_route_only(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    clock.advance(60 - clock.now() % 60)
    for _ in range(2):
        assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 200
    refused = await web.post(ASK, json={"query": QUESTIONS["llm"]})
    error = assert_envelope(refused, 503, "SITE_BUDGET_EXHAUSTED")
    assert error["retry_after"] == 30 and "FAQ and weather" in error["message"]  # the next call is due
    streamed = await web.post(ASK, json={"query": QUESTIONS["llm"]}, headers=STREAM)
    assert_envelope(streamed, 503, "SITE_BUDGET_EXHAUSTED")  # refused before the stream starts
    for route in ("faq", "weather"):
        assert (await web.post(ASK, json={"query": QUESTIONS[route]})).status_code == 200
    clock.advance(60)
    assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 200


@pytest.fixture
def tiny_token_budget(configure: dict[str, Any]) -> None:
    configure.update(site_llm_tokens_per_day=50)


@pytest.mark.usefixtures("tiny_token_budget")
async def test_spent_token_budget_refuses_chat_until_the_next_day(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    clock.advance(86_400 - clock.now() % 86_400)
    token = await get_token(web)
    clock.advance(4)
    first = await chat(web, token)
    assert first.status_code == 200 and first.json()["usage"]["total_tokens"] >= 50
    assert_envelope(await chat(web, token), 503, "SITE_BUDGET_EXHAUSTED")
    assert (await chat(web, token, "How do I rotate my API key?", mode="faq")).status_code == 200
