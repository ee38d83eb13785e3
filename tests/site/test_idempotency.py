"""Idempotency-Key on the public mutating routes: replay, conflict, format, 24 h window, and
exactly one side effect for 50 concurrent duplicates (in memory and with Redis as the KV)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.site.tables import OrderRecord
from agent_server.storage.records import IdempotencyRecord, JobRecord
from tests.site.conftest import assert_envelope, count_rows
from tests.site.test_chat import CHAT, get_token

JOB = {"type": "faq_lookup", "input": {"query": "keys"}}


def key() -> str:
    return str(uuid.uuid4())


async def test_same_key_and_body_replays_the_stored_response(
    web: httpx.AsyncClient, site_app: FastAPI
) -> None:
    k = key()
    first = await web.post("/api/jobs.php", json=JOB, headers={"Idempotency-Key": k})
    assert first.status_code == 202 and "Idempotency-Replayed" not in first.headers
    # Same JSON, other key order and spacing, via the alias path: one operation, one body.
    again = await web.post(
        "/api/jobs",
        content=b'{"input": {"query": "keys"},  "type": "faq_lookup"}',
        headers={"Idempotency-Key": f'"{k}"', "Content-Type": "application/json"},
    )
    assert again.status_code == 202 and again.headers["Idempotency-Replayed"] == "true"
    assert again.json() == first.json()
    assert again.headers["content-type"].startswith("application/json")
    assert await count_rows(site_app, JobRecord) == 1
    assert await count_rows(site_app, IdempotencyRecord) == 1


async def test_same_key_with_another_body_is_409(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    k = key()
    assert (await web.post("/api/jobs.php", json=JOB, headers={"Idempotency-Key": k})).status_code == 202
    other = await web.post(
        "/api/jobs.php",
        json={"type": "faq_lookup", "input": {"query": "billing"}},
        headers={"Idempotency-Key": k},
    )
    error = assert_envelope(other, 409, "IDEMPOTENCY_CONFLICT")
    assert error["type"] == "idempotency_conflict" and error["param"] == "Idempotency-Key"
    assert await count_rows(site_app, JobRecord) == 1


async def test_malformed_keys_are_400(web: httpx.AsyncClient) -> None:
    for bad in ("not-a-uuid", "8e03978e-40d5-13e8-bc93-6894a57f9324", "", '"abc"'):  # the 2nd is a v1
        response = await web.post("/api/jobs.php", json=JOB, headers={"Idempotency-Key": bad})
        assert assert_envelope(response, 400, "INVALID_IDEMPOTENCY_KEY")["param"] == "Idempotency-Key"


async def test_the_window_is_24_hours(web: httpx.AsyncClient, site_app: FastAPI, clock: ManualClock) -> None:
    k = key()
    first = (await web.post("/api/jobs.php", json=JOB, headers={"Idempotency-Key": k})).json()
    clock.advance(86_399)
    assert (await web.post("/api/jobs.php", json=JOB, headers={"Idempotency-Key": k})).json() == first
    clock.advance(1)
    later = await web.post("/api/jobs.php", json=JOB, headers={"Idempotency-Key": k})
    assert later.status_code == 202 and "Idempotency-Replayed" not in later.headers
    assert later.json()["job_id"] != first["job_id"]


@pytest.mark.parametrize("backend", ["memory", "production"], indirect=True)
async def test_50_concurrent_submissions_with_one_key_create_one_job(
    web: httpx.AsyncClient, site_app: FastAPI
) -> None:
    headers = {"Idempotency-Key": key()}
    responses = await asyncio.gather(
        *(web.post("/api/jobs.php", json=JOB, headers=headers) for _ in range(50))
    )
    assert await count_rows(site_app, JobRecord) == 1
    created = [r for r in responses if r.status_code == 202]
    assert all(r.status_code in (202, 409) for r in responses)
    assert len({r.json()["job_id"] for r in created}) == 1
    assert sum("Idempotency-Replayed" not in r.headers for r in created) == 1
    for r in responses:
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS" and r.headers["Retry-After"] == "1"


async def test_cancel_and_checkout_and_chat_honour_the_key(
    web: httpx.AsyncClient, site_app: FastAPI, clock: ManualClock
) -> None:
    job_id = (await web.post("/api/jobs.php", json={"type": "ask", "input": {"query": "hi"}})).json()[
        "job_id"
    ]
    k = key()
    first = await web.delete(f"/api/jobs/{job_id}", headers={"Idempotency-Key": k})
    replay = await web.delete(f"/api/jobs/{job_id}", headers={"Idempotency-Key": k})
    if first.status_code == 200:  # a fast worker may have finished the job first: then 409 twice
        assert replay.json() == first.json() and replay.headers["Idempotency-Replayed"] == "true"
    else:
        assert first.status_code == replay.status_code == 409
    other_job = (await web.post("/api/jobs.php", json=JOB)).json()["job_id"]
    reused = await web.delete(f"/api/jobs/{other_job}", headers={"Idempotency-Key": k})
    assert_envelope(reused, 409, "IDEMPOTENCY_CONFLICT")  # the key names one exact request

    order = {"item_id": "agent-architecture-review", "email": "buyer@example.com"}
    k = key()
    orders = [
        await web.post("/api/checkout.php", json=order, headers={"Idempotency-Key": k}) for _ in range(3)
    ]
    assert {r.status_code for r in orders} == {201} and len({r.json()["order_id"] for r in orders}) == 1
    assert await count_rows(site_app, OrderRecord) == 1

    token = await get_token(web)
    clock.advance(4)
    body = {"message": "hello", "session_token": token}
    headers = {"X-Platform-Token": token, "Idempotency-Key": key()}
    chats = [await web.post(CHAT, json=body, headers=headers) for _ in range(2)]
    assert chats[0].json() == chats[1].json() and chats[1].headers["Idempotency-Replayed"] == "true"
    assert chats[0].headers["RateLimit-Remaining"] == "19"  # the replay used no quota
    third = await web.post(CHAT, json=body, headers={"X-Platform-Token": token})
    assert third.headers["RateLimit-Remaining"] == "18"


async def test_errors_below_500_are_replayed_but_429_is_not(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    k = key()
    bad = {"type": "nope", "input": {}}
    first = await web.post("/api/jobs.php", json=bad, headers={"Idempotency-Key": k})
    again = await web.post("/api/jobs.php", json=bad, headers={"Idempotency-Key": k})
    assert first.status_code == again.status_code == 400 and again.headers["Idempotency-Replayed"] == "true"
    clock.advance(3600 - clock.now() % 3600)
    for _ in range(60):
        await web.post("/api/ask.php", json={"query": "How do I rotate my API key?"})
    k = key()
    limited = await web.post(
        "/api/ask.php", json={"query": "How do I rotate my API key?"}, headers={"Idempotency-Key": k}
    )
    assert limited.status_code == 429
    clock.advance(3600)
    retried = await web.post(
        "/api/ask.php", json={"query": "How do I rotate my API key?"}, headers={"Idempotency-Key": k}
    )
    assert retried.status_code == 200 and "Idempotency-Replayed" not in retried.headers
