"""The one rule of the public site's rate-limit headers (docs/public-api.md): ``RateLimit-Reset`` is
the seconds until the whole allowance is back, ``Retry-After`` (and ``error.retry_after``) the
seconds until the next request passes; the site's model budget answers its 503 by the same rule."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from tests.site.conftest import assert_envelope
from tests.site.test_ask import ASK, QUESTIONS
from tests.site.test_chat import chat, get_token


async def test_a_chat_429_says_when_the_next_message_passes_and_when_all_are_back(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    """The reported case: 20 messages an hour (one every 180 s), the 21st 16 s after the first."""
    token = await get_token(web)
    clock.advance(4)  # the token's minimum age
    for _ in range(20):
        assert (await chat(web, token, mode="faq")).status_code == 200
    clock.advance(16)
    refused = await chat(web, token, mode="faq")
    error = assert_envelope(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert refused.headers["RateLimit-Reset"] == "3584"  # 3600 s of allowance, 16 s of it back
    assert refused.headers["Retry-After"] == "164" == str(error["retry_after"])  # 180 - 16
    clock.advance(163)
    assert (await chat(web, token, mode="faq")).status_code == 429
    clock.advance(1)
    admitted = await chat(web, token, mode="faq")
    assert admitted.status_code == 200 and admitted.headers["RateLimit-Remaining"] == "0"
    reset = int(admitted.headers["RateLimit-Reset"])
    assert reset == 3600  # the bucket is empty again: every unit back in 20 intervals
    clock.advance(reset)
    token = await get_token(web)  # the first one expired meanwhile
    clock.advance(4)
    assert (await chat(web, token, mode="faq")).headers["RateLimit-Remaining"] == "19"


@pytest.fixture
def tight_budgets(configure: dict[str, Any]) -> None:
    configure.update(site_llm_requests_per_minute=2, site_llm_tokens_per_day=1_000_000)


@pytest.mark.usefixtures("tight_budgets")
async def test_the_call_budget_503_says_when_the_next_call_is_admitted(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    for _ in range(2):  # 2 calls a minute: one every 30 s
        assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 200
    refused = await web.post(ASK, json={"query": QUESTIONS["llm"]})
    error = assert_envelope(refused, 503, "SITE_BUDGET_EXHAUSTED")
    assert refused.headers["Retry-After"] == "30" == str(error["retry_after"])  # not the full minute
    clock.advance(29)
    assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 503
    clock.advance(1)
    assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 200


@pytest.fixture
def tiny_token_budget(configure: dict[str, Any]) -> None:
    configure.update(site_llm_tokens_per_day=50)  # one token back every 1728 s


@pytest.mark.usefixtures("tiny_token_budget")
async def test_the_token_budget_503_says_when_the_next_call_is_admitted(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    first = await web.post(ASK, json={"query": QUESTIONS["llm"]})
    assert first.status_code == 200  # the call's tokens are counted after it, past the budget
    refused = await web.post(ASK, json={"query": QUESTIONS["llm"]})
    error = assert_envelope(refused, 503, "SITE_BUDGET_EXHAUSTED")
    wait = int(refused.headers["Retry-After"])
    assert wait == error["retry_after"] and wait % 1728 == 0  # a whole number of tokens back
    clock.advance(wait - 1)
    assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 503
    clock.advance(1)
    assert (await web.post(ASK, json={"query": QUESTIONS["llm"]})).status_code == 200
