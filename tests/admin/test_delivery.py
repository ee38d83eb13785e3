"""The delivery worker against a real loopback receiver: signatures, backoff, leases, 410, exhaustion."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from agent_server.admin.wiring import AdminServices, admin_services
from agent_server.capabilities.services import Services, build_services, close_services
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.events import KeyRotated
from agent_server.foundation.settings import Settings
from agent_server.storage.migrate import upgrade
from agent_server.webhooks.delivery import DeliveryWorker
from agent_server.webhooks.dispatcher import subscribe
from agent_server.webhooks.signing import verify_platform, verify_standard
from tests.admin.conftest import Receiver

TENANT = "ten_alpha"


@dataclass
class Core:
    services: Services
    admin: AdminServices
    clock: ManualClock


@pytest.fixture
async def core(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Core]:
    """SQLite by default; ``parametrize("core", ["postgres"], indirect=True)`` runs on a real PostgreSQL."""
    database_url = (
        request.getfixturevalue("postgres_url") if getattr(request, "param", "") == "postgres" else None
    )
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, redis_url=None, webhook_timeout_seconds=10.0
    )
    upgrade(settings)
    clock = ManualClock(start=time.time())  # near real time: the reference verifier checks the window
    services = build_services(settings, clock)
    admin = admin_services(services)
    unsubscribe = subscribe(services.events, admin.webhooks, admin.worker.wake)
    yield Core(services, admin, clock)
    unsubscribe()
    await close_services(services)


async def rotate(core: Core) -> str:
    event = KeyRotated(
        tenant_id=TENANT, occurred_at=core.clock.now(), old_key_id="key_old", new_key_id="key_new", name="ci"
    )
    await core.services.events.publish(event)
    return event.id


@pytest.mark.parametrize("core", ["sqlite", "postgres"], indirect=True)
async def test_delivery_carries_both_signatures_and_the_documented_payload(
    core: Core, receiver: Receiver
) -> None:
    _hook, secret = await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    assert secret.startswith("whsec_")
    event_id = await rotate(core)
    assert await core.admin.worker.tick() == 1

    [got] = receiver.requests
    payload = Webhook(secret).verify(got.body, got.headers)  # the reference implementation
    assert payload == got.json()
    assert set(payload) == {"id", "type", "created_at", "tenant_id", "data"}
    assert payload["id"] == event_id == got.headers["webhook-id"]
    assert payload["type"] == "key.rotated" and payload["tenant_id"] == TENANT
    assert payload["data"] == {"old_key_id": "key_old", "new_key_id": "key_new", "name": "ci"}
    expected = "sha256=" + hmac.new(secret.encode(), got.body, hashlib.sha256).hexdigest()
    assert got.headers["x-platform-signature"] == expected
    assert verify_platform(secret, expected, got.body)
    assert verify_standard(secret, got.headers, got.body, core.clock.now())

    # Tampered body, replayed old message and a foreign secret all fail the reference verifier.
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(got.body.replace(b"key_new", b"key_bad"), got.headers)
    stale = {**got.headers, "webhook-timestamp": str(int(time.time()) - 600)}
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(got.body, stale)
    assert not verify_standard(secret, got.headers, got.body, core.clock.now() + 301)
    _, other = await core.admin.webhooks.create("ten_other", receiver.url, ["key.rotated"])
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(got.body, got.headers)


@pytest.mark.parametrize("core", ["sqlite", "postgres"], indirect=True)
async def test_failed_twice_then_delivered_on_the_third_attempt_without_sleeping(
    core: Core, receiver: Receiver
) -> None:
    hook, secret = await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    receiver.respond(500, 503)
    await rotate(core)
    worker = core.admin.worker

    assert await worker.tick() == 1  # attempt 1: 500
    assert await worker.tick() == 0  # not due yet: backoff is on the clock, not the wall
    core.clock.advance(1.2)  # 1 s +- 10 % jitter
    assert await worker.tick() == 1  # attempt 2: 503
    core.clock.advance(4)
    assert await worker.tick() == 0
    core.clock.advance(2)  # 5 s +- 10 % after the second failure
    assert await worker.tick() == 1  # attempt 3: 200

    assert len(receiver.requests) == 3
    ids = {r.headers["webhook-id"] for r in receiver.requests}
    stamps = [int(r.headers["webhook-timestamp"]) for r in receiver.requests]
    assert len(ids) == 1 and stamps == sorted(stamps) and stamps[0] < stamps[-1]
    Webhook(secret).verify(receiver.requests[-1].body, receiver.requests[-1].headers)
    [(delivery, attempts)] = await core.admin.webhooks.deliveries(TENANT, hook.id)
    assert delivery.status == "delivered" and delivery.attempts == 3
    assert [a.status_code for a in attempts] == [500, 503, 200]
    assert attempts[0].error == "receiver answered 500" and attempts[2].error is None
    assert all(a.latency_ms >= 0 for a in attempts)


async def test_retries_follow_the_schedule_and_stop_after_24_hours(core: Core, receiver: Receiver) -> None:
    hook, _ = await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    receiver.respond(*([500] * 100))
    await rotate(core)
    worker = core.admin.worker
    await worker.tick()
    [(delivery, attempts)] = await core.admin.webhooks.deliveries(TENANT, hook.id)
    while delivery.status == "pending":
        # Jump exactly to the scheduled time: nothing is sent a moment earlier.
        wait = delivery.next_attempt_at.timestamp() - core.clock.now()
        core.clock.advance(wait - 0.01)
        assert await worker.tick() == 0
        core.clock.advance(0.02)
        assert await worker.tick() == 1
        [(delivery, attempts)] = await core.admin.webhooks.deliveries(TENANT, hook.id)
    times = [a.at.timestamp() for a in attempts]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # 1 s, 5 s, 30 s, 2 min, 10 min, then hourly, each +- 10 % jitter.
    for gap, base in zip(gaps, (1, 5, 30, 120, 600, *([3600] * 30)), strict=False):
        assert base * 0.9 - 0.05 <= gap <= base * 1.1 + 0.05
    assert delivery.status == "failed"
    assert times[-1] - delivery.created_at.timestamp() <= 24 * 3600
    assert 25 <= len(attempts) <= 30 and len(receiver.requests) == len(attempts)


async def test_receiver_answering_410_disables_the_endpoint(core: Core, receiver: Receiver) -> None:
    hook, _ = await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    receiver.respond(410)
    await rotate(core)
    await core.admin.worker.tick()
    [(delivery, _)] = await core.admin.webhooks.deliveries(TENANT, hook.id)
    assert delivery.status == "failed"
    assert (await core.admin.webhooks.list(TENANT))[0].enabled is False
    await rotate(core)  # a disabled endpoint gets no new deliveries
    assert len(await core.admin.webhooks.deliveries(TENANT, hook.id)) == 1


@pytest.mark.parametrize("core", ["sqlite", "postgres"], indirect=True)
async def test_two_workers_never_send_one_attempt_twice(core: Core, receiver: Receiver) -> None:
    await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    for _ in range(5):
        await rotate(core)
    admin = core.admin
    workers = [
        DeliveryWorker(core.services.db, admin.box, core.clock, admin.guard, timeout=10.0) for _ in range(3)
    ]
    counts = await asyncio.gather(*(w.tick() for w in workers))
    assert sum(counts) == 5
    assert len(receiver.requests) == 5
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 5


@pytest.mark.parametrize("core", ["sqlite", "postgres"], indirect=True)
async def test_an_abandoned_lease_is_retried_after_it_expires(core: Core, receiver: Receiver) -> None:
    await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    await rotate(core)
    crashed = DeliveryWorker(core.services.db, core.admin.box, core.clock, core.admin.guard)
    assert len(await crashed._claim()) == 1  # claimed, then the process "dies"
    assert await core.admin.worker.tick() == 0  # leased: nobody else sends it
    core.clock.advance(61)
    assert await core.admin.worker.tick() == 1
    assert len(receiver.requests) == 1


async def test_a_redirect_is_a_failed_attempt_and_is_not_followed(core: Core, receiver: Receiver) -> None:
    hook, _ = await core.admin.webhooks.create(TENANT, receiver.url, ["key.rotated"])
    receiver.respond(302, headers={"location": "http://169.254.169.254/latest/meta-data/"})
    await rotate(core)
    await core.admin.worker.tick()
    [(delivery, attempts)] = await core.admin.webhooks.deliveries(TENANT, hook.id)
    assert attempts[0].status_code == 302 and attempts[0].error == "redirect not followed"
    assert delivery.status == "pending" and len(receiver.requests) == 1


async def test_other_event_kinds_and_other_tenants_get_nothing(core: Core, receiver: Receiver) -> None:
    await core.admin.webhooks.create(TENANT, receiver.url, ["audit.flagged"])
    await core.admin.webhooks.create("ten_beta", receiver.url, ["key.rotated"])
    await rotate(core)
    assert await core.admin.worker.tick() == 0
    assert receiver.requests == []


async def test_the_worker_stops_on_a_cancel_that_arrives_as_it_is_woken(core: Core) -> None:
    """The app's stop cancels the worker once; a delivery enqueued at that moment must not keep it
    running (asyncio.wait_for in Python 3.11 swallowed such a cancel)."""
    worker = DeliveryWorker(core.services.db, core.admin.box, core.clock, core.admin.guard)
    running = asyncio.create_task(worker.run(poll_seconds=60))
    await asyncio.sleep(0.5)  # its first tick found nothing: it waits to be woken
    worker.wake()
    running.cancel()
    await asyncio.sleep(0.05)
    assert running.cancelled()
