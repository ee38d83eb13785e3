"""Rotating a webhook's signing secret: the new secret is shown once, the next attempt of an event
queued before the rotation is signed with it (verified by the Standard Webhooks reference and the
HMAC recipe at a real receiver), the old one verifies nothing any more, another tenant gets 404."""

from __future__ import annotations

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.admin.conftest import Receiver, World
from tests.admin.test_webhooks_http import assert_signed, register, rotate_a_key


async def test_a_rotated_secret_signs_every_later_attempt(world: World, receiver: Receiver) -> None:
    hook = await register(world, receiver.url)
    receiver.respond(500)
    await rotate_a_key(world)
    assert await world.admin.worker.tick() == 1  # the first attempt, signed with the first secret
    assert_signed(hook["secret"], receiver.requests[0])

    path = f"/admin/webhooks/{hook['id']}/rotate-secret"
    rotated = await world.client.post(path, headers=world.auth("a_admin"))
    assert rotated.status_code == 200, rotated.text
    assert rotated.headers["cache-control"] == "no-store"
    new = rotated.json()
    assert new["id"] == hook["id"] and new["secret"].startswith("whsec_") and new["secret"] != hook["secret"]
    listed = await world.client.get(f"/admin/webhooks/{hook['id']}", headers=world.auth("a_admin"))
    assert new["secret"] not in listed.text and "secret" not in listed.json()

    world.clock.advance(2)  # the retry of the event queued before the rotation
    assert await world.admin.worker.tick() == 1
    retried = receiver.requests[1]
    assert_signed(new["secret"], retried)
    with pytest.raises(WebhookVerificationError):
        Webhook(hook["secret"]).verify(retried.body, retried.headers)

    audit = await world.client.get(
        "/admin/audit", params={"action": "webhook.rotate_secret"}, headers=world.auth("a_admin")
    )
    [entry] = audit.json()["data"]
    assert entry["target"] == hook["id"] and new["secret"] not in audit.text


async def test_another_tenants_webhook_secret_cannot_be_rotated(world: World, receiver: Receiver) -> None:
    hook = await register(world, receiver.url)
    path = f"/admin/webhooks/{hook['id']}/rotate-secret"
    foreign = await world.client.post(path, headers=world.auth("b_admin"))
    assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "not_found"
    member = await world.client.post(path, headers=world.auth("a_member"))
    assert member.status_code == 403
    await rotate_a_key(world)
    assert await world.admin.worker.tick() == 1
    assert_signed(hook["secret"], receiver.requests[0])  # unchanged
