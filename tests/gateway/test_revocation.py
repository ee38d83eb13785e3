"""Revocation and rotation take effect on the very next request, here and (within the cache TTL) elsewhere."""

from __future__ import annotations

import asyncio

from agent_server.foundation.events import Event, KeyRotated
from tests.gateway.conftest import Harness, HarnessFactory, key_headers


async def models(harness: Harness, key: str) -> int:
    return (await harness.client.get("/v1/models", headers=key_headers(key))).status_code


async def test_a_revoked_key_gets_401_on_its_very_next_request(harness: Harness) -> None:
    admin = await harness.tenant()
    key_id, key = await harness.key(admin)
    assert await models(harness, key) == 200  # now cached in this process
    await harness.client.delete(f"/admin/api-keys/{key_id}", headers=admin.headers)
    response = await harness.client.get("/v1/models", headers=key_headers(key))
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"
    assert (await harness.chat(key)).status_code == 401


async def test_rotation_replaces_the_key_at_once_and_emits_key_rotated(harness: Harness) -> None:
    seen: list[Event] = []

    async def collect(event: KeyRotated) -> None:
        seen.append(event)

    harness.gateway.services.events.subscribe(KeyRotated, collect, durable=True)
    admin = await harness.tenant()
    old_id, old_key = await harness.key(admin, ("chat",))
    assert (await harness.chat(old_key)).status_code == 200
    response = await harness.client.post("/admin/keys/rotate", json={"key_id": old_id}, headers=admin.headers)
    assert response.status_code == 201
    new = response.json()
    assert new["rotated_from"] == old_id and new["id"] != old_id and new["key"] != old_key
    assert new["scopes"] == ["chat"] and new["name"] == "test"
    assert (await harness.chat(old_key)).status_code == 401
    assert (await harness.chat(new["key"])).status_code == 200
    assert len(seen) == 1
    event = seen[0]
    assert isinstance(event, KeyRotated) and event.kind == "key.rotated" and event.tenant_id == admin.id
    assert event.envelope()["data"] == {"old_key_id": old_id, "new_key_id": new["id"], "name": "test"}
    listed = {
        k["id"]: k
        for k in (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"]
    }
    assert listed[old_id]["replaced_by"] == new["id"] and listed[old_id]["revoked_at"] is not None
    again = await harness.client.post("/admin/keys/rotate", json={"key_id": old_id}, headers=admin.headers)
    assert again.status_code == 404


async def test_concurrent_rotations_of_one_key_leave_one_successor(harness: Harness) -> None:
    admin = await harness.tenant()
    key_id, _ = await harness.key(admin)
    responses = await asyncio.gather(
        *(
            harness.client.post("/admin/keys/rotate", json={"key_id": key_id}, headers=admin.headers)
            for _ in range(5)
        )
    )
    assert sorted(r.status_code for r in responses) == [201, 404, 404, 404, 404]
    live = [
        k
        for k in (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"]
        if k["revoked_at"] is None
    ]
    assert len(live) == 1


async def test_another_process_sees_a_revocation_within_the_cache_ttl(make_harness: HarnessFactory) -> None:
    """Two apps on one database (two workers): B learns of A's revocation once its cache entry ages out."""
    async with make_harness() as a, make_harness() as b:
        admin = await a.tenant()
        key_id, key = await a.key(admin)
        assert await models(b, key) == 200  # cached in B
        await a.client.delete(f"/admin/api-keys/{key_id}", headers=admin.headers)
        assert await models(a, key) == 401
        ttl = b.gateway.keys.ttl
        assert ttl <= 1.0
        b.clock.advance(ttl)  # one shared ManualClock: B's entry is now exactly ttl old
        assert await models(b, key) == 401


async def test_a_lookup_racing_a_revocation_does_not_cache_the_stale_answer(harness: Harness) -> None:
    admin = await harness.tenant()
    key_id, key = await harness.key(admin)
    # Start many cold lookups and the revocation together; whatever the interleaving, afterwards it is 401.
    results = await asyncio.gather(
        *(models(harness, key) for _ in range(20)),
        harness.client.delete(f"/admin/api-keys/{key_id}", headers=admin.headers),
    )
    assert set(results[:-1]) <= {200, 401}
    assert await models(harness, key) == 401
