"""Acceptance: key.rotated from POST /admin/keys/rotate reaches a real receiver, signed, durably."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time

import httpx
from standardwebhooks.webhooks import Webhook

from agent_server.admin.wiring import admin_services
from agent_server.foundation.clock import ManualClock
from http_facade.app import create_app
from tests.admin.conftest import Receiver, World, admin_settings, populate
from tests.conftest import BASE_URL, running


async def register(world: World, url: str, who: str = "a_admin", events: list[str] | None = None) -> dict:
    body = {"url": url, "events": events or ["key.rotated"], "description": "ci receiver"}
    response = await world.client.post("/admin/webhooks", json=body, headers=world.auth(who))
    assert response.status_code == 201, response.text
    return response.json()


async def rotate_a_key(world: World) -> dict:
    gateway = world.app.state.gateway
    key, _ = await gateway.issue_key(world.tenants["a"], "ci", ["chat"])
    response = await world.client.post(
        "/admin/keys/rotate", json={"key_id": key.id}, headers=world.auth("a_admin")
    )
    assert response.status_code == 201, response.text
    return {"old": key.id, "new": response.json()["id"]}


def assert_signed(secret: str, received) -> dict:
    payload = Webhook(secret).verify(received.body, received.headers)  # Standard Webhooks reference
    mac = hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    assert received.headers["x-platform-signature"] == f"sha256={mac}"
    return payload


async def test_rotate_reaches_the_receiver_with_both_signatures(world: World, receiver: Receiver) -> None:
    hook = await register(world, receiver.url)
    assert hook["secret"].startswith("whsec_") and hook["events"] == ["key.rotated"]
    listed = await world.client.get("/admin/webhooks", headers=world.auth("a_admin"))
    assert hook["secret"] not in listed.text and "secret" not in listed.json()["data"][0]

    keys = await rotate_a_key(world)
    # Durable before the rotate response returned: the delivery row is already there.
    log = (
        await world.client.get(f"/admin/webhooks/{hook['id']}/deliveries", headers=world.auth("a_admin"))
    ).json()
    assert [d["status"] for d in log["data"]] == ["pending"]

    assert await world.admin.worker.tick() == 1
    [received] = receiver.requests
    payload = assert_signed(hook["secret"], received)
    assert payload["type"] == "key.rotated" and payload["tenant_id"] == world.tenants["a"]
    assert payload["data"]["old_key_id"] == keys["old"] and payload["data"]["new_key_id"] == keys["new"]
    assert received.headers["webhook-id"] == payload["id"]
    assert payload["created_at"].endswith("Z")


async def test_a_receiver_failing_twice_gets_the_event_on_the_third_attempt(
    world: World, receiver: Receiver
) -> None:
    hook = await register(world, receiver.url)
    receiver.respond(500, 500)
    await rotate_a_key(world)
    worker = world.admin.worker
    assert await worker.tick() == 1
    world.clock.advance(1.2)
    assert await worker.tick() == 1
    world.clock.advance(4.0)
    assert await worker.tick() == 0  # 5 s +- 10 % after the second failure: not yet
    world.clock.advance(2.0)
    assert await worker.tick() == 1
    assert len(receiver.requests) == 3
    assert_signed(hook["secret"], receiver.requests[-1])

    log = (
        await world.client.get(f"/admin/webhooks/{hook['id']}/deliveries", headers=world.auth("a_admin"))
    ).json()
    [delivery] = log["data"]
    assert delivery["status"] == "delivered"
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 500, 200]
    assert [a["error"] for a in delivery["attempts"]] == [
        "receiver answered 500",
        "receiver answered 500",
        None,
    ]
    assert all(isinstance(a["latency_ms"], int) for a in delivery["attempts"])


async def test_a_restart_between_attempts_loses_no_delivery(settings, receiver: Receiver) -> None:
    first = ManualClock(start=time.time())
    settings = admin_settings(settings)
    async with running(create_app(settings, clock=first)) as app:
        tenants, _, tokens = await populate(app, first)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client:
            world = World(app, client, first, settings, tenants, {}, tokens)
            hook = await register(world, receiver.url)
            receiver.respond(503)
            await rotate_a_key(world)
            assert await world.admin.worker.tick() == 1  # attempt 1 fails; attempt 2 is due in ~1 s
    assert len(receiver.requests) == 1

    # A new process on the same data_dir, with its background worker on: it finds and sends the delivery.
    later = ManualClock(start=first.now() + 5)
    async with running(create_app(settings.model_copy(update={"webhook_worker": True}), clock=later)) as app:
        for _ in range(200):
            if len(receiver.requests) == 2:
                break
            await asyncio.sleep(0.02)
        assert len(receiver.requests) == 2
        assert_signed(hook["secret"], receiver.requests[1])
        assert receiver.requests[0].headers["webhook-id"] == receiver.requests[1].headers["webhook-id"]
        # The worker records the attempt once the receiver has answered: a loaded machine may take a
        # while between the two, so wait for the record, bounded only against a hang.
        webhooks, deadline = admin_services(app.state.services).webhooks, time.monotonic() + 30
        while True:
            [(delivery, attempts)] = await webhooks.deliveries(tenants["a"], hook["id"])
            if delivery.status != "pending" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        assert delivery.status == "delivered" and [a.status_code for a in attempts] == [503, 200]


async def test_test_ping_is_signed_and_reports_only_status_and_latency(
    world: World, receiver: Receiver
) -> None:
    hook = await register(world, receiver.url)
    response = await world.client.post(f"/admin/webhooks/{hook['id']}/test", headers=world.auth("a_admin"))
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["delivered"] is True and result["status_code"] == 200 and result["latency_ms"] >= 0
    assert set(result) == {"delivery_id", "event_type", "delivered", "status_code", "latency_ms", "error"}
    payload = assert_signed(hook["secret"], receiver.requests[0])
    assert payload["type"] == "webhook.test"

    receiver.respond(500)
    failed = (
        await world.client.post(f"/admin/webhooks/{hook['id']}/test", headers=world.auth("a_admin"))
    ).json()
    assert failed["delivered"] is False and failed["status_code"] == 500
    world.clock.advance(3600)
    assert await world.admin.worker.tick() == 0  # a ping is not retried


async def test_registration_refuses_bad_urls_unknown_events_and_plans_without_webhooks(world: World) -> None:
    auth = world.auth("a_admin")
    for url in (
        "http://10.0.0.1/hook",
        "http://169.254.169.254/",
        "ftp://example.com/x",
        "http://user:pw@127.0.0.1/",
        "http://ex\x84ample.com/hook",  # no IDNA form: refused before the look-up (was a 500)
    ):
        response = await world.client.post(
            "/admin/webhooks", json={"url": url, "events": ["key.rotated"]}, headers=auth
        )
        assert response.status_code == 400 and response.json()["error"]["code"] == "url_refused", url
    response = await world.client.post(
        "/admin/webhooks", json={"url": "http://127.0.0.1:9/x", "events": ["order.created"]}, headers=auth
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "events"
    await world.client.patch(
        f"/admin/platform/tenants/{world.tenants['a']}",
        json={"plan_id": "starter"},
        headers=world.auth("platform"),
    )
    response = await world.client.post(
        "/admin/webhooks", json={"url": "http://127.0.0.1:9/x", "events": ["key.rotated"]}, headers=auth
    )
    assert response.status_code == 403 and response.json()["error"]["code"] == "plan_limit_exceeded"


async def test_delete_stops_pending_deliveries(world: World, receiver: Receiver) -> None:
    hook = await register(world, receiver.url)
    await rotate_a_key(world)
    response = await world.client.delete(f"/admin/webhooks/{hook['id']}", headers=world.auth("a_admin"))
    assert response.status_code == 200 and response.json()["deleted"] is True
    assert await world.admin.worker.tick() == 0 and receiver.requests == []
    assert (await world.client.get("/admin/webhooks", headers=world.auth("a_admin"))).json()["data"] == []
    gone = await world.client.get(f"/admin/webhooks/{hook['id']}", headers=world.auth("a_admin"))
    assert gone.status_code == 404


async def test_a_410_disables_the_endpoint_until_it_is_enabled_again(
    world: World, receiver: Receiver
) -> None:
    hook = await register(world, receiver.url)
    auth, url = world.auth("a_admin"), f"/admin/webhooks/{hook['id']}"
    receiver.respond(410)
    await rotate_a_key(world)
    await world.admin.worker.tick()
    disabled = (await world.client.get(url, headers=auth)).json()
    assert disabled["enabled"] is False and "410" in disabled["disabled_reason"]
    assert (await world.client.post(f"{url}/test", headers=auth)).status_code == 409

    changed = await world.client.patch(
        url, json={"enabled": True, "events": ["key.rotated", "audit.flagged"]}, headers=auth
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["enabled"] is True and changed.json()["disabled_reason"] is None
    assert changed.json()["events"] == ["audit.flagged", "key.rotated"]
    assert (await world.client.post(f"{url}/test", headers=auth)).json()["delivered"] is True
    bad = await world.client.patch(url, json={"url": "http://192.168.0.1/x"}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "url_refused"
    other = await world.client.patch(url, json={"enabled": False}, headers=world.auth("b_admin"))
    assert other.status_code == 404
