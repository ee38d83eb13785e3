"""Order events to the agent platform: ``order_create`` when a session completes and ``order_update``
when the administrator moves the order, sent by the durable webhook worker to a loopback receiver,
shaped as the spec's webhook OpenAPI defines them and signed with ``Merchant-Signature``."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from agent_server.admin.wiring import admin_services
from agent_server.webhooks.tables import WebhookAttemptRecord
from tests.admin.conftest import Receiver, receiver  # noqa: F401  (the loopback receiver fixture)
from tests.commerce.conftest import SPEC, Shop, World, payment
from tests.conftest import BASE_URL

SIGNATURE = re.compile(r"^t=(\d+),v1=([a-f0-9]{64})$")


def assert_webhook_event(body: dict[str, Any]) -> None:
    """``body`` is a ``WebhookEvent`` of the spec's webhook OpenAPI (its Order from the checkout one)."""
    documents = {}
    for name in ("openapi.agentic_checkout.yaml", "openapi.agentic_checkout_webhook.yaml"):
        documents[name] = yaml.safe_load((SPEC / "openapi" / name).read_text())
    registry = Registry().with_resources(
        (f"file:///spec/{name}", Resource(document, DRAFT202012)) for name, document in documents.items()
    )
    ref = {"$ref": "file:///spec/openapi.agentic_checkout_webhook.yaml#/components/schemas/WebhookEvent"}
    errors = list(Draft202012Validator(ref, registry=registry).iter_errors(body))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def verify(secret: str, headers: dict[str, str], body: bytes) -> None:
    match = SIGNATURE.match(headers["merchant-signature"])
    assert match, headers
    expected = hmac.new(secret.encode(), match.group(1).encode() + b"." + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, match.group(2))


async def test_order_events_reach_the_platform_signed(world: World, receiver: Receiver) -> None:  # noqa: F811
    c, auth = world.client, world.auth("platform")
    made = (
        await c.post(
            "/admin/platform/agent-platforms",
            json={"name": "Hooked assistant", "webhook_url": receiver.url},
            headers=auth,
        )
    ).json()
    shop = Shop(world.app, c, world.clock, made["credential"], made["id"], made["signing_secret"])
    session = await shop.create()
    done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert done.status_code == 200, done.text
    order = done.json()["order"]
    worker = admin_services(world.app.state.services).worker
    assert await worker.tick() == 1
    [created] = receiver.requests
    verify(made["signing_secret"], created.headers, created.body)
    event = json.loads(created.body)
    assert_webhook_event(event)
    assert event["type"] == "order_create" and event["data"]["id"] == order["id"]
    assert event["data"]["status"] == "confirmed" and event["data"]["permalink_url"] == order["permalink_url"]

    receiver.respond(503)  # the platform is down once: retried like every webhook, from the log
    moved = await c.patch(
        f"/admin/platform/agent-orders/{order['id']}", json={"status": "completed"}, headers=auth
    )
    assert moved.status_code == 200 and moved.json()["status"] == "completed"
    assert await worker.tick() == 1
    world.clock.advance(2)
    assert await worker.tick() == 1
    updated = receiver.requests[-1]
    verify(made["signing_secret"], updated.headers, updated.body)
    event = json.loads(updated.body)
    assert_webhook_event(event)
    assert event["type"] == "order_update" and event["data"]["status"] == "completed"
    assert all(line["status"] == "fulfilled" for line in event["data"]["line_items"])
    async with world.app.state.services.db.session() as db:
        attempts = (await db.execute(WebhookAttemptRecord.__table__.select())).all()
    assert len(attempts) == 3  # the delivery log: created, the failed update, its retry

    refunded = await c.post(f"/admin/platform/agent-orders/{order['id']}/refund", headers=auth)
    assert refunded.status_code == 200, refunded.text
    assert refunded.json()["refunded_minor"] == order["totals"][-1]["amount"]
    assert await worker.tick() == 1
    event = json.loads(receiver.requests[-1].body)
    assert_webhook_event(event)
    [adjustment] = event["data"]["adjustments"]
    assert adjustment["type"] == "refund" and adjustment["amount"] == refunded.json()["refunded_minor"]
    assert adjustment["id"] == refunded.json()["refund_ref"] and adjustment["id"].startswith("re_sbx_")
    twice = await c.post(f"/admin/platform/agent-orders/{order['id']}/refund", headers=auth)
    assert twice.status_code == 409
    again = await c.patch(
        f"/admin/platform/agent-orders/{order['id']}", json={"status": "canceled"}, headers=auth
    )
    assert again.status_code == 409
    listed = (await c.get("/admin/platform/agent-orders", headers=auth)).json()["data"]
    assert [o["id"] for o in listed] == [order["id"]] and listed[0]["status"] == "completed"
    assert BASE_URL in order["permalink_url"]


async def test_the_webhook_url_is_changed_and_removed_by_the_admin(world: World, receiver: Receiver) -> None:  # noqa: F811
    c, auth = world.client, world.auth("platform")
    made = (
        await c.post("/admin/platform/agent-platforms", json={"name": "Later hooked"}, headers=auth)
    ).json()
    shop = Shop(world.app, c, world.clock, made["credential"], made["id"], made["signing_secret"])
    orders = []
    for _ in range(2):
        session = await shop.create()
        done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
        assert done.status_code == 200, done.text
        orders.append(done.json()["order"]["id"])
    worker = admin_services(world.app.state.services).worker
    assert await worker.tick() == 0  # no address yet: no order events

    path = f"/admin/platform/agent-platforms/{made['id']}"
    changed = await c.patch(path, json={"webhook_url": receiver.url}, headers=auth)
    assert changed.status_code == 200 and changed.json()["webhook_url"] == receiver.url
    moved = await c.patch(
        f"/admin/platform/agent-orders/{orders[0]}", json={"status": "completed"}, headers=auth
    )
    assert moved.status_code == 200
    assert await worker.tick() == 1
    [update] = receiver.requests
    verify(made["signing_secret"], update.headers, update.body)  # signed with the same secret
    assert json.loads(update.body)["data"]["id"] == orders[0]

    removed = await c.patch(path, json={"webhook_url": None}, headers=auth)
    assert removed.status_code == 200 and removed.json()["webhook_url"] is None
    await c.patch(f"/admin/platform/agent-orders/{orders[1]}", json={"status": "canceled"}, headers=auth)
    assert await worker.tick() == 0 and len(receiver.requests) == 1

    refused = await c.patch(path, json={"webhook_url": "ftp://x.example/"}, headers=auth)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "url_refused"
    extra = await c.patch(path, json={"webhook_url": None, "name": "x"}, headers=auth)
    assert extra.status_code == 400
    member = await c.patch(path, json={"webhook_url": None}, headers=world.auth("a_admin"))
    assert member.status_code == 403
    assert (
        await c.patch("/admin/platform/agent-platforms/plat_nobody", json={"webhook_url": None}, headers=auth)
    ).status_code == 404
    await c.delete(path, headers=auth)
    revoked = await c.patch(path, json={"webhook_url": receiver.url}, headers=auth)
    assert revoked.status_code == 409 and revoked.json()["error"]["code"] == "platform_revoked"
