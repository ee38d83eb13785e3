"""``POST /agent/auth`` with ``identity_type: anonymous``: a Free-plan key that works at once with the
``openai`` SDK, expires, is limited per address and per IP, and joins the organisation the address
registers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import openai
import pytest

from tests.accounts.conftest import World, bearer
from tests.agent_auth.conftest import WorldFactory, anonymous, sdk

MESSAGES = [{"role": "user", "content": "Hello from an anonymous agent"}]
WEEK = 7 * 86_400


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_the_key_works_at_once_on_the_free_plan_and_expires(world: World) -> None:
    issued = await anonymous(world, "Agent.Owner@Example.com")
    assert issued.status_code == 201, issued.text
    assert issued.headers["cache-control"] == "no-store"
    body = issued.json()
    assert set(body) == {"api_key", "expires_at", "scopes"} and body["scopes"] == ["chat", "models"]
    expected = datetime.fromtimestamp(world.clock.now(), UTC) + timedelta(seconds=WEEK)
    assert abs((moment(body["expires_at"]) - expected).total_seconds()) < 2
    async with sdk(world, body["api_key"]) as client:
        completion = await client.chat.completions.create(model="agentgate-mock-small", messages=MESSAGES)  # type: ignore[arg-type]
        assert "anonymous agent" in (completion.choices[0].message.content or "")
        assert [m.id async for m in client.models.list()] == ["agentgate-mock-small", "gpt-4o-mini"]
        with pytest.raises(openai.BadRequestError) as outside:  # not a model of the Free plan
            await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)  # type: ignore[arg-type]
        assert outside.value.code == "model_not_found"
        world.clock.advance(WEEK + 1)
        with pytest.raises(openai.AuthenticationError) as expired:
            await client.chat.completions.create(model="agentgate-mock-small", messages=MESSAGES)  # type: ignore[arg-type]
        assert expired.value.code == "invalid_api_key" and "expired" in str(expired.value)
    (notice,) = await world.mails("agent.owner@example.com")
    assert notice.kind == "anonymous_key" and "/app/register" in notice.text
    assert body["api_key"] not in notice.text  # the key is shown once, in the answer


async def test_invalid_and_disposable_addresses_are_refused(world: World) -> None:
    cases = {
        "no-at-sign": "invalid_email",
        "agent@localhost": "invalid_email",
        "agent@reserved.test": "invalid_email",
        "agent@mailinator.com": "disposable_email",
        "agent@inbox.guerrillamail.com": "disposable_email",
    }
    for email, code in cases.items():
        refused = await anonymous(world, email)
        assert refused.status_code == 400, (email, refused.text)
        error = refused.json()["error"]
        assert (error["code"], error["param"], error["type"]) == (code, "email", "invalid_request_error")
    assert await world.mails() == []


async def test_an_address_holds_at_most_three_live_keys(make_world: WorldFactory) -> None:
    async with make_world(agent_auth_limit_per_email=10) as world:
        keys = [(await anonymous(world, "cap@example.com")).json()["api_key"] for _ in range(3)]
        refused = await anonymous(world, "cap@example.com")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "anonymous_key_limit"
        assert (await anonymous(world, "other@example.com")).status_code == 201  # per address
        world.clock.advance(WEEK + 1)  # every key expired: room again, in a tenant of its own
        again = await anonymous(world, "cap@example.com")
        assert again.status_code == 201, again.text
        async with sdk(world, again.json()["api_key"]) as client:
            assert [m.id async for m in client.models.list()]
        async with sdk(world, keys[0]) as client:
            with pytest.raises(openai.AuthenticationError):
                await client.models.list()


async def test_limits_per_address_and_per_ip(make_world: WorldFactory) -> None:
    async with make_world(agent_auth_limit_per_email=1, agent_auth_limit_per_ip=3) as world:
        assert (await anonymous(world, "one@example.com")).status_code == 201
        per_address = await anonymous(world, "one@example.com")
        assert per_address.status_code == 429 and int(per_address.headers["retry-after"]) > 3600
        assert (await anonymous(world, "two@example.com")).status_code == 201
        per_ip = await anonymous(world, "three@example.com")  # the fourth call from this IP
        assert per_ip.status_code == 429 and per_ip.json()["error"]["code"] == "rate_limit_exceeded"


async def test_the_keys_join_the_organisation_the_address_registers(world: World) -> None:
    key = (await anonymous(world, "founder@example.com")).json()["api_key"]
    stranger = (await anonymous(world, "stranger@example.com")).json()["api_key"]
    admin = await world.registered_admin("founder@example.com", "Founders")
    listed = (await world.client.get("/admin/api-keys", headers=bearer(admin["access_token"]))).json()["data"]
    assert [(k["name"], k["redacted"][-4:], k["expires_at"]) for k in listed] == [
        ("anonymous agent", key[-4:], None)
    ]
    world.clock.advance(WEEK + 1)  # an organisation's key does not expire with the anonymous ones
    async with sdk(world, key) as client:
        assert (await client.models.list()).data
    async with sdk(world, stranger) as client:
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()


async def test_keys_of_an_address_that_has_an_account_stay_anonymous(make_world: WorldFactory) -> None:
    async with make_world(agent_auth_limit_per_email=10) as world:
        first, second = await asyncio.gather(  # the first keys of an address, at once: one tenant
            anonymous(world, "twice@example.com"), anonymous(world, "twice@example.com")
        )
        assert first.status_code == second.status_code == 201, (first.text, second.text)
        admin = await world.registered_admin("twice@example.com", "Twice")
        headers = bearer(admin["access_token"])
        assert len((await world.client.get("/admin/api-keys", headers=headers)).json()["data"]) == 2
        later = (await anonymous(world, "twice@example.com")).json()["api_key"]
        listed = (await world.client.get("/admin/api-keys", headers=headers)).json()["data"]
        assert later[-4:] not in [k["redacted"][-4:] for k in listed]  # knowing an address adds no keys
        async with sdk(world, later) as client:
            assert (await client.models.list()).data  # it works, on the Free plan, on its own


async def test_the_free_plan_is_never_offered_to_organisations(world: World) -> None:
    offered = [plan["id"] for plan in (await world.client.get("/register")).json()["plans"]]
    assert "free" not in offered and "starter" in offered
    chosen = await world.register("someone@example.com", "Someone", plan="free")
    assert chosen.status_code == 400 and chosen.json()["error"]["param"] == "plan"


async def test_anonymous_keys_and_their_move_on_postgresql(
    make_world: WorldFactory, postgres_url: str
) -> None:
    async with make_world(database_url=postgres_url, agent_auth_limit_per_email=10) as world:
        first, second = await asyncio.gather(
            anonymous(world, "pg@example.com"), anonymous(world, "pg@example.com")
        )
        assert first.status_code == second.status_code == 201, (first.text, second.text)
        assert (await anonymous(world, "pg@example.com")).status_code == 201
        capped = await anonymous(world, "pg@example.com")
        assert capped.status_code == 403 and capped.json()["error"]["code"] == "anonymous_key_limit"
        admin = await world.registered_admin("pg@example.com", "Postgres agents")
        listed = (await world.client.get("/admin/api-keys", headers=bearer(admin["access_token"]))).json()
        assert len(listed["data"]) == 3
        async with sdk(world, first.json()["api_key"]) as client:
            assert (await client.models.list()).data
