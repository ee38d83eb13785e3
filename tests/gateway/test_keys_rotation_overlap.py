"""Rotation with an overlap: the old key keeps working beside the new one until the overlap ends,
then fails with 401 like a revoked key, in every process, with no event needed (its end is stored as
its ``revoked_at`` and compared with the clock). Without an overlap it stops at once (spec 3.2)."""

from __future__ import annotations

import pytest

from agent_server.foundation.events import Event, KeyRotated
from agent_server.foundation.timeutil import iso, utc
from tests.gateway.conftest import Harness, HarnessFactory, TenantAdmin, key_headers

HOUR = 3600


async def rotate(h: Harness, admin: TenantAdmin, key_id: str, **fields: object) -> dict:
    response = await h.client.post(
        "/admin/keys/rotate", json={"key_id": key_id, **fields}, headers=admin.headers
    )
    assert response.status_code == 201, response.text
    return response.json()


async def models(h: Harness, key: str) -> int:
    return (await h.client.get("/v1/models", headers=key_headers(key))).status_code


async def test_both_keys_work_until_the_overlap_ends_then_the_old_one_is_401(harness: Harness) -> None:
    admin = await harness.tenant()
    old_id, old_key = await harness.key(admin)
    assert (await harness.chat(old_key)).status_code == 200  # cached before the rotation
    now = harness.clock.now()
    new = await rotate(harness, admin, old_id, overlap_seconds=HOUR)
    assert new["rotated_from"] == old_id and new["old_key_revoked_at"] == int(now + HOUR)
    for key in (old_key, new["key"]):
        assert (await harness.chat(key)).status_code == 200
    old = (await harness.client.get(f"/admin/api-keys/{old_id}", headers=admin.headers)).json()
    assert old["replaced_by"] == new["id"] and old["revoked_at"] == int(now + HOUR)
    harness.clock.advance(HOUR - 1)
    assert (await harness.chat(old_key)).status_code == 200
    harness.clock.advance(1)
    refused = await harness.chat(old_key)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    assert await models(harness, old_key) == 401
    assert (await harness.chat(new["key"])).status_code == 200


async def test_a_key_in_its_overlap_cannot_be_rotated_or_changed_again(harness: Harness) -> None:
    admin = await harness.tenant()
    old_id, _ = await harness.key(admin)
    await rotate(harness, admin, old_id, overlap_seconds=HOUR)
    again = await harness.client.post("/admin/keys/rotate", json={"key_id": old_id}, headers=admin.headers)
    assert again.status_code == 404  # one successor only
    patch = await harness.client.patch(f"/admin/api-keys/{old_id}", json={"name": "x"}, headers=admin.headers)
    assert patch.status_code == 404


async def test_revoking_the_old_key_ends_its_overlap_at_once(harness: Harness) -> None:
    admin = await harness.tenant()
    old_id, old_key = await harness.key(admin)
    new = await rotate(harness, admin, old_id, overlap_seconds=86_400)
    assert await models(harness, old_key) == 200
    revoked = await harness.client.delete(f"/admin/api-keys/{old_id}", headers=admin.headers)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] <= harness.clock.now()
    assert await models(harness, old_key) == 401
    assert await models(harness, new["key"]) == 200
    again = await harness.client.delete(f"/admin/api-keys/{old_id}", headers=admin.headers)
    assert again.json()["revoked_at"] == revoked.json()["revoked_at"]  # idempotent


async def test_without_an_overlap_the_old_key_stops_at_once(harness: Harness) -> None:
    admin = await harness.tenant()
    old_id, old_key = await harness.key(admin)
    assert await models(harness, old_key) == 200
    new = await rotate(harness, admin, old_id, overlap_seconds=0)
    assert new["old_key_revoked_at"] <= harness.clock.now()
    assert await models(harness, old_key) == 401 and await models(harness, new["key"]) == 200


async def test_another_process_stops_the_old_key_when_the_overlap_ends(make_harness: HarnessFactory) -> None:
    """Two apps on one database and one clock (two workers): B cached the old key during the
    overlap; when the overlap ends B refuses it from that cache entry, with no event from A."""
    async with make_harness() as a, make_harness(key_cache_ttl_seconds=1.0) as b:
        admin = await a.tenant()
        old_id, old_key = await a.key(admin)
        await rotate(a, admin, old_id, overlap_seconds=HOUR)
        a.clock.advance(HOUR - 0.5)
        assert await models(b, old_key) == 200  # B reads the key now: cached for a second
        a.clock.advance(0.5)
        assert b.gateway.keys._cache, "B should still hold the key in its cache"
        assert await models(b, old_key) == 401  # from the cached entry: the overlap's end is in it
        assert await models(a, old_key) == 401


async def test_key_rotated_says_when_the_overlap_ends(harness: Harness) -> None:
    seen: list[Event] = []

    async def collect(event: KeyRotated) -> None:
        seen.append(event)

    harness.gateway.services.events.subscribe(KeyRotated, collect, durable=True)
    admin = await harness.tenant()
    first_id, _ = await harness.key(admin)
    now = harness.clock.now()
    second = await rotate(harness, admin, first_id, overlap_seconds=HOUR)
    await rotate(harness, admin, second["id"])
    with_overlap, at_once = (event.envelope()["data"] for event in seen)
    assert with_overlap == {
        "old_key_id": first_id,
        "new_key_id": second["id"],
        "name": "test",
        "old_key_revoked_at": iso(utc(now + HOUR)),
    }
    assert set(at_once) == {"old_key_id", "new_key_id", "name"}  # at once: the payload as before


@pytest.mark.parametrize("overlap", [-1, 604_801, "1h", 1.5, None])
async def test_the_overlap_is_0_to_7_days_in_whole_seconds(harness: Harness, overlap: object) -> None:
    admin = await harness.tenant()
    key_id, key = await harness.key(admin)
    response = await harness.client.post(
        "/admin/keys/rotate", json={"key_id": key_id, "overlap_seconds": overlap}, headers=admin.headers
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "overlap_seconds"
    assert await models(harness, key) == 200  # nothing happened to the key


async def test_the_longest_overlap_is_seven_days(harness: Harness) -> None:
    admin = await harness.tenant()
    old_id, old_key = await harness.key(admin)
    await rotate(harness, admin, old_id, overlap_seconds=604_800)
    harness.clock.advance(604_799)
    assert await models(harness, old_key) == 200
    harness.clock.advance(1)
    assert await models(harness, old_key) == 401


async def test_a_key_in_its_overlap_keeps_its_budget_after_a_restart(make_harness: HarnessFactory) -> None:
    """The budget scan counts keys in their overlap: a restart (a fresh in-memory KV, its counters
    gone) still refuses the old key from its usage rows."""
    async with make_harness() as first:
        admin = await first.tenant()
        created = await first.client.post(
            "/admin/api-keys",
            json={"name": "budgeted", "budget": {"period": "total", "max_tokens": 1}},
            headers=admin.headers,
        )
        old_id, old_key = created.json()["id"], created.json()["key"]
        assert (await first.chat(old_key)).status_code == 200  # crosses the budget
        assert (await first.chat(old_key)).status_code == 402
        await rotate(first, admin, old_id, overlap_seconds=HOUR)
        await first.gateway.usage.flush()
    async with make_harness() as second:  # the same database, a new process
        await second.gateway.budgets.scan()  # what the process does at start and every few seconds
        refused = await second.chat(old_key)
        assert refused.status_code == 402 and refused.json()["error"]["code"] == "budget_exceeded"
