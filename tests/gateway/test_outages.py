"""What each surface answers when Redis or the database is unreachable (docs/operations.md).

Redis away: per-key limits and the cheap public routes count per process (``X-RateLimit-Degraded:
1``), the chat proxy refuses with 503 and ``Retry-After``, usage is still recorded, ``/health`` is
degraded and readiness stays 200. Database away: 503 with ``Retry-After``, never a 500.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from fastapi import FastAPI
from sqlalchemy.exc import IntegrityError, OperationalError

from agent_server.foundation.settings import Settings
from agent_server.storage.db import Database
from http_facade.errors import database_down
from tests.conftest import free_port
from tests.gateway.conftest import Harness, HarnessFactory, key_headers

ORIGIN = "http://localhost:5173"
CHAT = "/api/chat-completion.php"


async def test_with_redis_unreachable_the_policies_hold(make_harness: HarnessFactory) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    async with make_harness(redis_url=dead, redis_timeout_seconds=0.2) as h:
        admin = await h.tenant("professional")
        _, key = await h.key(admin)
        for _ in range(5):
            answer = await h.client.get("/v1/models", headers=key_headers(key))
            assert answer.status_code == 200 and answer.headers["X-RateLimit-Degraded"] == "1"
        ask = await h.client.post("/api/ask.php", json={"query": "How do I rotate my API key?"})
        assert ask.status_code == 200 and ask.headers["X-RateLimit-Degraded"] == "1"
        assert ask.headers["RateLimit-Remaining"] == "59"  # counted, per process
        job = await h.client.post("/api/jobs", json={"type": "faq_lookup", "input": {"query": "keys"}})
        assert job.status_code == 202 and job.headers["X-RateLimit-Degraded"] == "1"

        token = (await h.client.get(CHAT, params={"action": "token"}, headers={"Origin": ORIGIN})).json()
        h.clock.advance(5)
        body = {"message": "Hello", "mode": "faq", "session_token": token["token"]}
        refused = await h.client.post(CHAT, json=body, headers={"X-Platform-Token": token["token"]})
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
        assert refused.json()["error"]["code"] == "SERVICE_UNAVAILABLE"

        health = (await h.client.get("/health")).json()
        assert health["status"] == "degraded" and health["checks"]["cache"].startswith("error")
        assert (await h.client.get("/health/ready")).status_code == 200
        usage = await h.client.get("/admin/usage", headers=admin.headers)
        assert sum(row["requests"] for row in usage.json()["data"]) == 5  # kept in process, then written


@asynccontextmanager
async def database_unreachable(app: FastAPI, settings: Settings) -> AsyncIterator[None]:
    """Point the app's database at a closed PostgreSQL port, and back afterwards."""
    db: Database = app.state.services.db
    dead = Database(settings.model_copy(update={"database_url": f"postgresql://x@127.0.0.1:{free_port()}/x"}))
    saved = db.engine, db._sessions
    db.engine, db._sessions = dead.engine, dead._sessions
    try:
        yield
    finally:
        db.engine, db._sessions = saved
        await dead.dispose()


async def test_with_the_database_unreachable_requests_get_503_with_retry_after(
    make_harness: HarnessFactory, settings: Settings
) -> None:
    async with make_harness() as h:
        admin = await h.tenant("professional")
        _, key = await h.key(admin)
        async with database_unreachable(h.app, settings):
            h.clock.advance(5)  # past the key cache: the key must be read again
            answers = [
                await h.client.get("/v1/models", headers=key_headers(key)),
                await h.client.post("/api/jobs", json={"type": "faq_lookup", "input": {"query": "x"}}),
                await h.client.post(
                    "/api/jobs",
                    json={"type": "faq_lookup", "input": {"query": "x"}},
                    headers={"Idempotency-Key": "8e03978e-40d5-43e8-bc93-6894a57f9324"},
                ),
                await h.client.get("/admin/api-keys", headers=admin.headers),
            ]
            for answer in answers:
                assert answer.status_code == 503, answer.text
                assert answer.headers["Retry-After"] == "5"
            assert answers[0].json()["error"]["type"] == "server_error"  # the gateway envelope
            assert answers[1].json()["error"]["code"] == "SERVICE_UNAVAILABLE"  # the site envelope
            assert (await h.client.get("/health/ready")).status_code == 503
            assert (await h.client.get("/health")).json()["checks"]["database"].startswith("error")
        assert (await h.client.get("/v1/models", headers=key_headers(key))).status_code == 200


@pytest.mark.parametrize(
    ("error", "down"),
    [
        (OperationalError("SELECT 1", {}, ConnectionRefusedError()), True),
        (OperationalError("INSERT", {}, Exception("database is locked")), True),
        (IntegrityError("INSERT", {}, Exception("duplicate key")), False),  # a bug or a race: 500
    ],
)
def test_which_database_errors_mean_unavailable(error: Exception, down: bool) -> None:
    assert database_down(error) is down


async def test_a_client_that_leaves_before_its_body_arrives_is_no_server_error(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    _, key = await harness.key(await harness.tenant())
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {key}".encode())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [*headers, (b"content-type", b"application/json"), (b"content-length", b"40")],
        "client": ("127.0.0.1", 4321),
        "server": ("127.0.0.1", 8000),
    }
    await harness.app(scope, receive, send)
    assert sent[0]["status"] == 499
    assert "unhandled error" not in caplog.text
