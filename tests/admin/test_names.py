"""A deployment maps every neutral spelling of the contract (its naming note): the three product-named
path segments and the ``X-Platform-`` header prefix. The routes, the OpenAPI document, the discovery
document, the chat token answer and webhook deliveries all follow the mapping; nothing answers under
the neutral spelling any more."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.admin.conftest import Receiver, World, admin_settings, populate
from tests.admin.test_webhooks_http import register, rotate_a_key
from tests.conftest import BASE_URL, running

NAMES = {
    "office_suite_path_segment": "workspace",
    "search_provider_path_segment": "websearch",
    "billing_path_segment": "payments",
    "header_prefix": "X-Acme-",
}
NEUTRAL = ("office_suite", "search_provider", "billing_provider")


@pytest.fixture
async def named(settings: Settings) -> AsyncIterator[World]:
    clock = ManualClock(start=time.time())
    mapped = admin_settings(settings, **NAMES)
    async with running(create_app(mapped, clock=clock)) as app:
        tenants, users, tokens = await populate(app, clock)
        transport = httpx.ASGITransport(app, client=("10.1.2.3", 1234))
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield World(app, client, clock, mapped, tenants, users, tokens)


async def test_the_routes_answer_under_the_mapped_segments_only(named: World) -> None:
    c, auth = named.client, named.auth("a_admin")
    provisioned = await c.post("/admin/websearch/auto-provision", json={}, headers=auth)
    assert provisioned.status_code == 201, provisioned.text
    assert (await c.get("/admin/workspace/managed-status", headers=auth)).json()["configured"] is False
    assert (await c.get("/admin/websearch/managed-status", headers=auth)).json()["configured"] is True
    assert (await c.get("/payments/status")).status_code != 404
    for gone in ("/admin/office_suite/managed-status", "/admin/search_provider/managed-status"):
        answer = await c.get(gone, headers=auth)
        assert answer.status_code == 404 and answer.json()["error"]["type"] == "not_found_error"
    assert (await c.get("/billing_provider/status")).status_code == 404


async def test_the_openapi_document_follows_the_mapping(named: World) -> None:
    document = (await named.client.get("/openapi.json")).json()
    paths = document["paths"]
    assert not [p for p in paths if any(word in p for word in NEUTRAL)]
    assert {"/admin/workspace/bindings", "/admin/websearch/keys", "/payments/status"} <= set(paths)
    chat = paths["/api/chat-completion.php"]["post"]
    headers = {p["name"] for p in chat.get("parameters", []) if p.get("in") == "header"}
    assert "X-Acme-Token" in headers and "X-Platform-Token" not in headers
    assert "X-Platform-" not in str(document)


async def test_the_chat_token_travels_in_the_mapped_header(named: World) -> None:
    c = named.client
    answer = await c.get("/api/chat-completion.php", params={"action": "token"}, headers={"Origin": BASE_URL})
    assert answer.status_code == 200 and answer.json()["header"] == "X-Acme-Token"
    token = answer.json()["token"]
    named.clock.advance(4)  # the token's minimum age
    body = {"message": "What do you offer?", "mode": "faq", "session_token": token}
    neutral = await c.post("/api/chat-completion.php", json=body, headers={"X-Platform-Token": token})
    assert neutral.status_code == 401 and neutral.json()["error"]["code"] == "MISSING_TOKEN"
    assert "X-Acme-Token" in neutral.json()["error"]["message"]
    mapped = await c.post("/api/chat-completion.php", json=body, headers={"X-Acme-Token": token})
    assert mapped.status_code == 200, mapped.text
    meta = (await c.get("/api/site-meta.json")).json()
    chat = next(e for e in meta["endpoints"] if e["name"] == "chat")
    assert "X-Acme-Token" in chat["description"] and "X-Platform-" not in str(meta)


async def test_webhook_deliveries_are_signed_under_the_mapped_header(
    named: World, receiver: Receiver
) -> None:
    hook = await register(named, receiver.url)
    await rotate_a_key(named)
    assert await named.admin.worker.tick() == 1
    [received] = receiver.requests
    mac = hmac.new(hook["secret"].encode(), received.body, hashlib.sha256).hexdigest()
    assert received.headers["x-acme-signature"] == f"sha256={mac}"
    assert "x-platform-signature" not in received.headers
    page = await named.client.get("/app/webhooks")  # no session: the sign-in page, not the form
    assert page.status_code in (200, 303)


def test_a_segment_that_names_other_admin_routes_is_refused(settings: Settings) -> None:
    with pytest.raises(ValueError, match="webhooks"):
        create_app(admin_settings(settings, office_suite_path_segment="webhooks"))
    with pytest.raises(ValueError, match="differ"):
        create_app(
            admin_settings(settings, office_suite_path_segment="x1", search_provider_path_segment="x1")
        )
