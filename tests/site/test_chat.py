"""The chat proxy end to end: token issue (Origin), its 3 s minimum age, 1 h lifetime, IP and
User-Agent binding, the three modes and the 20-per-hour limit with next_steps."""

from __future__ import annotations

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from tests.site.conftest import ORIGIN, UA, ClientFactory, assert_envelope

CHAT = "/api/chat-completion.php"


async def get_token(client: httpx.AsyncClient) -> str:
    response = await client.get(CHAT, params={"action": "token"}, headers={"Origin": ORIGIN})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["expires_in"] == 3600 and body["header"] == "X-Platform-Token"
    assert response.headers["cache-control"] == "no-store"
    return body["token"]


async def chat(
    client: httpx.AsyncClient, token: str, message: str = "What do you offer?", **fields
) -> httpx.Response:
    body = {
        "message": message,
        "model": "agentgate-mock-small",
        "mode": "chat",
        "session_token": token,
        **fields,
    }
    return await client.post(CHAT, json=body, headers={"X-Platform-Token": token})


async def test_token_needs_an_allowed_origin(web: httpx.AsyncClient) -> None:
    assert_envelope(await web.get(CHAT, params={"action": "token"}), 403, "ORIGIN_REQUIRED")
    evil = await web.get(CHAT, params={"action": "token"}, headers={"Origin": "https://evil.example"})
    assert assert_envelope(evil, 403, "ORIGIN_NOT_ALLOWED")["type"] == "permission_error"
    public = await web.get(CHAT, params={"action": "token"}, headers={"Origin": "http://127.0.0.1:8000"})
    assert public.status_code == 200
    assert_envelope(await web.get(CHAT, headers={"Origin": ORIGIN}), 400, "VALIDATION_ERROR")


async def test_token_is_refused_for_its_first_three_seconds(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    token = await get_token(web)
    error = assert_envelope(await chat(web, token), 401, "TOKEN_TOO_YOUNG")
    assert error["type"] == "auth_error" and "too young" in error["message"]
    clock.advance(2.9)
    assert_envelope(await chat(web, token), 401, "TOKEN_TOO_YOUNG")
    clock.advance(0.1)
    response = await chat(web, token)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["object"] == "chat.completion" and answer["id"].startswith("chatcmpl-")
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert answer["choices"][0]["message"]["content"]
    assert answer["choices"][0]["finish_reason"] in ("stop", "length")
    usage = answer["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert answer["mode"] == "chat" and answer["model"] == "agentgate-mock-small"


async def test_token_expires_after_one_hour(web: httpx.AsyncClient, clock: ManualClock) -> None:
    token = await get_token(web)
    clock.advance(3599)
    assert (await chat(web, token)).status_code == 200
    clock.advance(1)
    assert "expired" in assert_envelope(await chat(web, token), 401, "EXPIRED_TOKEN")["message"]


async def test_token_is_bound_to_the_client_ip(client_for: ClientFactory, clock: ManualClock) -> None:
    home, elsewhere = client_for("1.2.3.4"), client_for("5.6.7.8")
    token = await get_token(home)
    clock.advance(4)
    error = assert_envelope(await chat(elsewhere, token), 401, "TOKEN_IP_MISMATCH")
    assert "another client IP" in error["message"]
    assert (await chat(home, token)).status_code == 200


async def test_token_is_bound_to_the_user_agent(client_for: ClientFactory, clock: ManualClock) -> None:
    token = await get_token(client_for("1.2.3.4", UA))
    clock.advance(4)
    other_browser = client_for("1.2.3.4", "another-browser/2.0")
    assert (
        "another User-Agent"
        in assert_envelope(await chat(other_browser, token), 401, "TOKEN_UA_MISMATCH")["message"]
    )


async def test_wrong_missing_or_mismatched_tokens_are_named(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    token = await get_token(web)
    clock.advance(4)
    payload, signature = token.split(".")
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + signature
    assert "invalid" in assert_envelope(await chat(web, forged), 401, "INVALID_TOKEN")["message"]
    assert_envelope(await chat(web, "garbage"), 401, "INVALID_TOKEN")
    body = {"message": "hi", "mode": "chat", "session_token": token}
    assert_envelope(await web.post(CHAT, json=body), 401, "MISSING_TOKEN")
    other = await get_token(web)
    mismatched = await web.post(CHAT, json=body, headers={"X-Platform-Token": other})
    assert_envelope(mismatched, 401, "TOKEN_MISMATCH")


async def test_modes_and_models(web: httpx.AsyncClient, clock: ManualClock) -> None:
    token = await get_token(web)
    clock.advance(4)
    faq = (await chat(web, token, "How do I rotate my API key?", mode="faq")).json()
    assert faq["mode"] == "faq" and faq["model"] == "faq" and faq["usage"]["total_tokens"] == 0
    assert faq["sources"] and faq["sources"][0]["kind"] == "faq"
    assert "rotat" in faq["choices"][0]["message"]["content"].lower()
    nothing = (await chat(web, token, "zebra xylophone quasar", mode="faq")).json()
    assert "No FAQ entry matches" in nothing["choices"][0]["message"]["content"] and nothing["sources"] == []
    concise = (await chat(web, token, "Tell me everything about your plans", mode="concise")).json()
    assert concise["mode"] == "concise" and concise["usage"]["completion_tokens"] <= 120
    default = await web.post(
        CHAT, json={"message": "hello", "session_token": token}, headers={"X-Platform-Token": token}
    )
    assert default.json()["mode"] == "chat" and default.json()["model"] == "agentgate-mock-small"
    error = assert_envelope(await chat(web, token, mode="poetry"), 400, "VALIDATION_ERROR")
    assert error["param"] == "mode"
    unknown = assert_envelope(await chat(web, token, model="no-such-model"), 400, "MODEL_NOT_FOUND")
    assert unknown["param"] == "model"


async def test_twenty_messages_per_hour_then_429_with_next_steps(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    clock.advance(-(clock.now() % 3600))  # start of a window, so the hour below is one window
    token = await get_token(web)
    clock.advance(4)
    for number in range(20):
        response = await chat(web, token, mode="faq")
        assert response.status_code == 200, response.text
        assert response.headers["RateLimit-Limit"] == "20;w=3600"
        assert response.headers["RateLimit-Remaining"] == str(19 - number)
    refused = await chat(web, token, mode="faq")
    error = assert_envelope(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert error["type"] == "rate_limit" and error["retry_after"] == int(refused.headers["Retry-After"]) > 0
    assert isinstance(error["next_steps"], list) and len(error["next_steps"]) >= 2
    assert refused.headers["RateLimit-Remaining"] == "0"
    clock.advance(int(refused.headers["Retry-After"]))
    fresh = await get_token(web)
    clock.advance(4)
    assert (await chat(web, fresh, mode="faq")).status_code == 200


@pytest.mark.parametrize("ip", ["9.9.9.9"])
async def test_rejected_tokens_do_not_use_the_quota(
    client_for: ClientFactory, clock: ManualClock, ip: str
) -> None:
    client = client_for(ip)
    token = await get_token(client)
    for _ in range(25):
        assert (await chat(client, token, mode="faq")).status_code == 401  # too young
    clock.advance(4)
    assert (await chat(client, token, mode="faq")).headers["RateLimit-Remaining"] == "19"
