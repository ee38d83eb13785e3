"""Keys as people use them: a model allow-list, an expiry date and metadata, set at creation or by
PATCH, shown by GET, enforced on /v1 (the official openai SDK is the client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI

from tests.conftest import BASE_URL
from tests.gateway.conftest import MODEL, Harness, TenantAdmin, key_headers

MESSAGES = [{"role": "user", "content": "Hello there"}]


@asynccontextmanager
async def sdk(h: Harness, key: str) -> AsyncIterator[AsyncOpenAI]:
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(h.app), base_url=BASE_URL)
    async with AsyncOpenAI(base_url=f"{BASE_URL}/v1", api_key=key, max_retries=0, http_client=transport) as c:
        yield c


async def create(h: Harness, admin: TenantAdmin, **fields: Any) -> httpx.Response:
    body = {"name": "settings", "scopes": ["chat", "models"], **fields}
    return await h.client.post("/admin/api-keys", json=body, headers=admin.headers)


async def test_a_key_limited_to_one_model_gets_403_on_another_and_lists_only_that_one(
    harness: Harness,
) -> None:
    admin = await harness.tenant("professional")
    created = await create(harness, admin, models=[MODEL])
    assert created.status_code == 201 and created.json()["models"] == [MODEL]
    async with sdk(harness, created.json()["key"]) as client:
        assert [m.id async for m in client.models.list()] == [MODEL]
        answer = await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        assert answer.choices[0].message.content
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
        assert refused.value.code == "model_not_allowed"
        assert refused.value.body["param"] == "model"  # type: ignore[index]
        with pytest.raises(openai.NotFoundError):
            await client.models.retrieve("gpt-4o-mini")
        # Outside the plan stays what it was: 400 model_not_found, before the key's own list.
        with pytest.raises(openai.BadRequestError) as outside:
            await client.chat.completions.create(model="claude-sonnet-4", messages=MESSAGES)  # type: ignore[arg-type]
        assert outside.value.code == "model_not_found"


async def test_an_allow_list_takes_patterns_and_is_cut_by_the_plan(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    key = (await create(harness, admin, models=["agentgate-mock-*", "claude-*"])).json()["key"]
    async with sdk(harness, key) as client:
        # claude-sonnet-4 matches the key's pattern but not the Professional plan: not listed.
        assert [m.id async for m in client.models.list()] == ["agentgate-mock-small", "agentgate-mock-large"]
        assert (await client.models.retrieve("agentgate-mock-large")).id == "agentgate-mock-large"


async def test_an_expired_key_gets_401_invalid_api_key(harness: Harness) -> None:
    admin = await harness.tenant()
    expires = int(harness.clock.now()) + 60
    created = await create(harness, admin, expires_at=expires)
    assert created.json()["expires_at"] == expires
    key = created.json()["key"]
    assert (await harness.chat(key)).status_code == 200
    harness.clock.advance(61)
    async with sdk(harness, key) as client:
        with pytest.raises(openai.AuthenticationError) as expired:
            await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    assert expired.value.code == "invalid_api_key" and "expired" in expired.value.message
    models = await harness.client.get("/v1/models", headers=key_headers(key))
    assert models.status_code == 401 and models.headers["WWW-Authenticate"].startswith("Bearer ")


async def test_settings_are_validated_with_the_field_named(harness: Harness) -> None:
    admin = await harness.tenant()
    now = int(harness.clock.now())
    cases = [
        ({"expires_at": now - 1}, "expires_at"),
        ({"models": []}, "models"),
        ({"models": ["gpt 4o"]}, "models.0"),
        ({"budget": {"period": "day"}}, "budget"),
        ({"budget": {"period": "week", "max_tokens": 5}}, "budget.period"),
        ({"metadata": {f"k{i}": i for i in range(17)}}, "metadata"),
        ({"metadata": {"note": "x" * 3000}}, "metadata"),
        ({"metadata": {"nested": {"a": 1}}}, "metadata.nested.str"),
    ]
    for fields, param in cases:
        response = await create(harness, admin, **fields)
        assert response.status_code == 400, (fields, response.text)
        assert response.json()["error"]["param"] == param, fields
    assert (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"] == []


async def test_patch_changes_a_key_and_the_next_request_follows(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    created = (await create(harness, admin, metadata={"team": "search"})).json()
    key_id, key = created["id"], created["key"]
    assert (await harness.chat(key, model="gpt-4o-mini")).status_code == 200
    patched = await harness.client.patch(
        f"/admin/api-keys/{key_id}",
        json={"name": "renamed", "models": [MODEL], "metadata": {"team": "ads", "cost_centre": 42}},
        headers=admin.headers,
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["name"] == "renamed" and body["models"] == [MODEL]
    assert body["metadata"] == {"team": "ads", "cost_centre": 42} and body["scopes"] == ["chat", "models"]
    assert (await harness.chat(key, model="gpt-4o-mini")).status_code == 403  # at once, in this process
    cleared = await harness.client.patch(
        f"/admin/api-keys/{key_id}", json={"models": None, "scopes": ["chat"]}, headers=admin.headers
    )
    assert cleared.json()["models"] is None and cleared.json()["scopes"] == ["chat"]
    assert cleared.json()["metadata"] == {"team": "ads", "cost_centre": 42}  # not sent: unchanged
    assert (await harness.chat(key, model="gpt-4o-mini")).status_code == 200
    assert (await harness.client.get("/v1/models", headers=key_headers(key))).status_code == 403
    shown = (await harness.client.get(f"/admin/api-keys/{key_id}", headers=admin.headers)).json()
    assert shown["name"] == "renamed" and shown["spend"]["period"] == "total" and shown["spend"]["tokens"] > 0


async def test_patch_refuses_what_create_refuses_and_foreign_or_revoked_keys(harness: Harness) -> None:
    admin, other = await harness.tenant("starter"), await harness.tenant("starter")
    key_id = (await create(harness, admin)).json()["id"]
    url = f"/admin/api-keys/{key_id}"
    files = await harness.client.patch(url, json={"scopes": ["files"]}, headers=admin.headers)
    assert files.status_code == 403 and files.json()["error"]["code"] == "plan_limit_exceeded"
    unknown = await harness.client.patch(url, json={"colour": "blue"}, headers=admin.headers)
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "colour"
    foreign = await harness.client.patch(url, json={"name": "mine"}, headers=other.headers)
    assert foreign.status_code == 404
    assert (await harness.client.get(url, headers=other.headers)).status_code == 404
    await harness.client.delete(url, headers=admin.headers)
    revoked = await harness.client.patch(url, json={"name": "again"}, headers=admin.headers)
    assert revoked.status_code == 404


async def test_rotation_carries_the_settings_and_plain_keys_show_none(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    expires = int(harness.clock.now()) + 86_400
    settings = {
        "models": ["agentgate-mock-*"],
        "budget": {"period": "month", "max_tokens": 1000, "max_spend": None},
        "expires_at": expires,
        "metadata": {"owner": "ci"},
    }
    key_id = (await create(harness, admin, **settings)).json()["id"]
    plain_id = (await create(harness, admin)).json()["id"]
    rotated = await harness.client.post("/admin/keys/rotate", json={"key_id": key_id}, headers=admin.headers)
    assert rotated.status_code == 201
    assert {name: rotated.json()[name] for name in settings} == settings
    listed = {
        k["id"]: k
        for k in (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"]
    }
    plain = listed[plain_id]
    assert (plain["models"], plain["budget"], plain["expires_at"], plain["metadata"]) == (
        None,
        None,
        None,
        None,
    )
    assert listed[rotated.json()["id"]]["spend"]["period"] == "month"
