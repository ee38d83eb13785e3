"""Bodies in the request log: only for keys that opted in (``log_bodies_days``, at creation or by
PATCH), capped, never headers, shown by ``GET /admin/logs/{request_id}`` and deleted by the
housekeeping job once their retention has passed on the service clock."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select

from agent_server.gateway.request_log_bodies import MAX_BODY_CHARS
from agent_server.gateway.tables import RequestBody, UsageRecord
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, TenantAdmin
from tests.gateway.test_keys_settings import MESSAGES, create, sdk

DAY = 86_400


async def detail(h: Harness, admin: TenantAdmin, request_id: str) -> dict[str, Any]:
    answer = await h.client.get(f"/admin/logs/{request_id}", headers=admin.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def stored_bodies(h: Harness) -> int:
    async with h.gateway.db.session() as session:
        return (await session.execute(select(func.count()).select_from(RequestBody))).scalar_one()


async def housekeeping(h: Harness) -> None:
    """The job worker's periodic step, as its loop runs it."""
    await h.app.state.site.worker().housekeeping()


async def test_only_a_key_that_opted_in_keeps_bodies_until_its_retention_ends(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    kept = (await create(harness, admin, log_bodies_days=1)).json()
    plain = (await create(harness, admin)).json()
    assert (kept["log_bodies_days"], plain["log_bodies_days"]) == (1, None)
    async with sdk(harness, kept["key"]) as client:
        answer = await client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        stream = await client.chat.completions.with_raw_response.create(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
        )
        streamed = "".join([c.choices[0].delta.content or "" async for c in stream.parse() if c.choices])
    async with sdk(harness, plain["key"]) as client:
        unkept = await client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]

    shown = await detail(harness, admin, answer.headers["x-request-id"])
    body = shown["body"]
    assert json.loads(body["request"]) == {"model": MODEL, "messages": MESSAGES}
    assert json.loads(body["response"]) == json.loads(answer.content)  # the answer the client got
    assert body["truncated"] is False and body["expires_at"] == pytest.approx(harness.clock.now() + DAY)
    assert kept["key"] not in json.dumps(body)  # headers (the key) are not bodies
    stream_body = (await detail(harness, admin, stream.headers["x-request-id"]))["body"]
    assert stream_body["response"] == streamed and json.loads(stream_body["request"])["stream"] is True
    assert (await detail(harness, admin, unkept.headers["x-request-id"]))["body"] is None
    assert await stored_bodies(harness) == 2

    harness.clock.advance(DAY - 1)
    await housekeeping(harness)
    assert await stored_bodies(harness) == 2
    harness.clock.advance(2)  # past the day: not shown any more, and the job deletes them
    admin.token = await harness.login(admin.email)  # a day later the admin's token has expired
    assert (await detail(harness, admin, answer.headers["x-request-id"]))["body"] is None
    await housekeeping(harness)
    assert await stored_bodies(harness) == 0
    entry = await detail(harness, admin, answer.headers["x-request-id"])
    assert entry["status"] == 200 and entry["usage"]["total_tokens"] > 0  # the row itself stays


async def test_patch_turns_bodies_on_and_off_and_rotation_keeps_the_setting(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    created = (await create(harness, admin)).json()
    key_path = f"/admin/api-keys/{created['id']}"

    async def call(key: str) -> str:
        return (await harness.chat(key)).headers["x-request-id"]

    before = await call(created["key"])
    patched = await harness.client.patch(key_path, json={"log_bodies_days": 30}, headers=admin.headers)
    assert patched.status_code == 200 and patched.json()["log_bodies_days"] == 30
    during = await call(created["key"])
    rotated = await harness.client.post(
        "/admin/keys/rotate", json={"key_id": created["id"]}, headers=admin.headers
    )
    assert rotated.status_code == 201 and rotated.json()["log_bodies_days"] == 30
    after_rotation = await call(rotated.json()["key"])
    off = await harness.client.patch(
        f"/admin/api-keys/{rotated.json()['id']}", json={"log_bodies_days": None}, headers=admin.headers
    )
    assert off.status_code == 200 and off.json()["log_bodies_days"] is None
    after = await call(rotated.json()["key"])
    stored = [
        (await detail(harness, admin, rid))["body"] is not None
        for rid in (before, during, after_rotation, after)
    ]
    assert stored == [False, True, True, False]


@pytest.mark.parametrize("value", [0, 91, -1, "7", True, 1.5])
async def test_log_bodies_days_is_1_to_90_whole_days(harness: Harness, value: Any) -> None:
    admin = await harness.tenant()
    refused = await create(harness, admin, log_bodies_days=value)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "log_bodies_days"


async def test_long_bodies_are_cut_and_errors_are_kept_as_the_client_got_them(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    key = (await create(harness, admin, log_bodies_days=7)).json()["key"]
    long = await harness.chat(key, content="word " * (MAX_BODY_CHARS // 4))
    body = (await detail(harness, admin, long.headers["x-request-id"]))["body"]
    assert body["truncated"] is True and len(body["request"]) == MAX_BODY_CHARS
    refused = await harness.chat(key, model="no-such-model")
    assert refused.status_code == 400
    entry = await detail(harness, admin, refused.headers["x-request-id"])
    assert entry["error_code"] == "model_not_found"
    assert json.loads(entry["body"]["response"])["error"] == {
        key: refused.json()["error"][key] for key in ("type", "code", "message", "param")
    }


@pytest.mark.redis
async def test_rows_through_the_redis_log_keep_the_token_their_bodies_carry(
    make_harness: HarnessFactory, redis_url: str
) -> None:
    async with make_harness(redis_url=redis_url) as h:
        admin = await h.tenant("professional")
        key = (await create(h, admin, log_bodies_days=3)).json()["key"]
        answer = await h.chat(key)
        entry = await detail(h, admin, answer.headers["x-request-id"])
        assert entry["body"] is not None and json.loads(entry["body"]["request"])["model"] == MODEL
        async with h.gateway.db.session() as session:
            token = (
                await session.execute(
                    select(UsageRecord.row_token).where(
                        UsageRecord.request_id == answer.headers["x-request-id"]
                    )  # type: ignore[arg-type]
                )
            ).scalar_one()
            assert await session.get(RequestBody, token) is not None


async def test_a_playground_chat_is_logged_with_its_trace(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    answer = await harness.client.post(
        "/admin/playground/chat", json={"model": MODEL, "messages": MESSAGES}, headers=admin.headers
    )
    assert answer.status_code == 200, answer.text
    (entry,) = (await harness.client.get("/admin/logs?endpoint=playground", headers=admin.headers)).json()[
        "data"
    ]
    assert entry["trace_id"] == answer.json()["trace_id"]
    assert (entry["key"], entry["upstream"]) == ({"id": "playground", "name": None}, "mock")
    assert entry["request_id"] == answer.headers["x-request-id"]
