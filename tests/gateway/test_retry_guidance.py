"""The retry rule of the contract (spec 7.2: on 429 wait Retry-After, then back off 1 s, 2 s, 4 s, 8 s
capped at the window's reset; at most 3 retries on 5xx) is what every published place says: the
429 envelopes of the gateway (read by the openai SDK) and of the public site, the chat proxy's
next_steps, AGENTS.md, the OpenAPI error texts and the error catalogue."""

from __future__ import annotations

import openai
import pytest

from tests.gateway.conftest import MODEL, HarnessFactory
from tests.gateway.test_keys_settings import create, sdk

BACKOFF = "back off 1 s, 2 s, 4 s, 8 s"


async def test_a_gateway_429_tells_the_sdk_how_to_back_off(make_harness: HarnessFactory) -> None:
    async with make_harness() as h:
        admin = await h.tenant("enterprise", rate_limit=1)
        key = (await create(h, admin)).json()["key"]
        async with sdk(h, key) as client:
            await client.models.list()
            with pytest.raises(openai.RateLimitError) as limited:
                await client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "Hi"}]
                )
        message = limited.value.message
        assert f"retry after {limited.value.response.headers['Retry-After']} s" in message
        assert BACKOFF in message and "never waiting past X-RateLimit-Reset" in message


async def test_a_site_429_and_the_chat_proxy_next_steps_say_the_same(make_harness: HarnessFactory) -> None:
    async with make_harness(site_ask_limit=1) as h:
        assert (await h.client.post("/api/ask.php", json={"query": "What are the plans?"})).status_code == 200
        limited = await h.client.post("/api/ask.php", json={"query": "What are the plans?"})
        assert limited.status_code == 429
        error = limited.json()["error"]
        assert BACKOFF in error["message"] and "never waiting past RateLimit-Reset" in error["message"]
        assert "same Idempotency-Key" in error["message"]
    from http_facade.routes.site_chat import NEXT_STEPS

    assert any("1 s, 2 s, 4 s, 8 s" in step and "RateLimit-Reset" in step for step in NEXT_STEPS)


async def test_agents_md_openapi_and_the_error_catalogue_state_the_rule(make_harness: HarnessFactory) -> None:
    async with make_harness() as h:
        agents = (await h.client.get("/AGENTS.md")).text
        assert (
            "1 s, 2 s, 4 s, 8 s" in agents and "X-RateLimit-Reset" in agents and "at most 3 retries" in agents
        )
        doc = (await h.client.get("/openapi.json")).json()
        limited = doc["paths"]["/v1/chat/completions"]["post"]["responses"]["429"]["description"]
        assert "1 s, 2 s, 4 s, 8 s" in limited and "RateLimit-Reset" in limited
        catalogue = (await h.client.get("/docs/errors", headers={"Accept": "application/json"})).json()
        remedies = {c["code"]: c["remedy"] for g in catalogue["groups"] for c in g["codes"]}
        assert "1 s, 2 s, 4 s, 8 s" in remedies["rate_limit_exceeded"]
        assert "RateLimit-Reset" in remedies["rate_limit_exceeded"]
        assert "at most 3 times" in remedies["server_error"]
