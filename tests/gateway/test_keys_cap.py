"""Each plan limits the live API keys of an organisation (plans.yaml ``max_keys``): one more is 403
``plan_limit_exceeded`` naming the limit and the plan that raises it; revoked, expired and replaced
keys free their place, a key in a rotation's overlap holds one until the overlap ends."""

from __future__ import annotations

import asyncio

import pytest

from agent_server.gateway import repository as repo
from tests.gateway.conftest import Harness, HarnessFactory, TenantAdmin

HOUR = 3600


async def create(h: Harness, admin: TenantAdmin, name: str = "k", **fields: object) -> tuple[int, dict]:
    response = await h.client.post("/admin/api-keys", json={"name": name, **fields}, headers=admin.headers)
    return response.status_code, response.json()


async def fill(h: Harness, admin: TenantAdmin, count: int) -> list[str]:
    ids = []
    for number in range(count):
        status, body = await create(h, admin, f"key {number}")
        assert status == 201, body
        ids.append(body["id"])
    return ids


def assert_key_limit(status: int, body: dict, plan: str, limit: int, raised_by: str) -> None:
    assert status == 403, body
    error = body["error"]
    assert error["code"] == "plan_limit_exceeded" and error["type"] == "permission_error"
    assert f"The {plan} plan allows {limit} active API keys" in error["message"]
    assert f"move to the {raised_by} plan" in error["message"]


async def test_the_plans_limits_are_read_from_plans_yaml(harness: Harness) -> None:
    plans = harness.gateway.catalog.plans
    assert (plans["starter"].max_keys, plans["professional"].max_keys, plans["enterprise"].max_keys) == (
        10,
        100,
        None,
    )


async def test_one_key_over_the_limit_is_403_naming_the_plan_that_raises_it(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    ids = await fill(harness, admin, 10)
    status, body = await create(harness, admin, "eleventh")
    assert_key_limit(status, body, "Starter", 10, "Professional")
    assert "this organisation has 10" in body["error"]["message"] and "(100 keys)" in body["error"]["message"]
    listed = (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"]
    assert len(listed) == 10  # nothing half-written
    other = await harness.tenant("starter")
    assert (await create(harness, other))[0] == 201  # the limit is each organisation's own
    await harness.client.delete(f"/admin/api-keys/{ids[0]}", headers=admin.headers)
    assert (await create(harness, admin, "in its place"))[0] == 201


async def test_expired_keys_free_their_place(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    await fill(harness, admin, 9)
    expires = int(harness.clock.now()) + HOUR
    assert (await create(harness, admin, "short-lived", expires_at=expires))[0] == 201
    assert (await create(harness, admin))[0] == 403
    harness.clock.advance(HOUR)
    assert (await create(harness, admin))[0] == 201


async def test_rotation_at_the_limit_works_at_once_but_an_overlap_needs_room(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    ids = await fill(harness, admin, 10)
    at_once = await harness.client.post("/admin/keys/rotate", json={"key_id": ids[0]}, headers=admin.headers)
    assert at_once.status_code == 201  # one live key for another
    replacement = at_once.json()["id"]
    overlap = await harness.client.post(
        "/admin/keys/rotate", json={"key_id": ids[1], "overlap_seconds": HOUR}, headers=admin.headers
    )
    assert_key_limit(overlap.status_code, overlap.json(), "Starter", 10, "Professional")
    shown = (await harness.client.get(f"/admin/api-keys/{ids[1]}", headers=admin.headers)).json()
    assert shown["revoked_at"] is None and shown["replaced_by"] is None  # the old key untouched
    await harness.client.delete(f"/admin/api-keys/{replacement}", headers=admin.headers)
    overlap = await harness.client.post(
        "/admin/keys/rotate", json={"key_id": ids[1], "overlap_seconds": HOUR}, headers=admin.headers
    )
    assert overlap.status_code == 201
    # Old and new key both live for the hour: the organisation is at its limit again ...
    assert (await create(harness, admin))[0] == 403
    harness.clock.advance(HOUR)
    assert (await create(harness, admin))[0] == 201  # ... until the overlap ends


async def test_enterprise_has_no_limit(harness: Harness) -> None:
    admin = await harness.tenant("enterprise")
    await fill(harness, admin, 12)  # past Starter's cap of 10, each one 201
    assert len(await repo.list_keys(harness.gateway.db, admin.id)) == 12


async def test_concurrent_creates_never_pass_the_limit(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    await fill(harness, admin, 7)
    results = await asyncio.gather(*(create(harness, admin, f"racer {n}") for n in range(8)))
    assert sorted(status for status, _ in results) == [201] * 3 + [403] * 5
    assert len(await repo.list_keys(harness.gateway.db, admin.id)) == 10


@pytest.mark.postgres
async def test_concurrent_creates_never_pass_the_limit_on_postgresql(
    make_harness: HarnessFactory, postgres_url: str
) -> None:
    async with make_harness(database_url=postgres_url) as h, make_harness(database_url=postgres_url) as h2:
        admin = await h.tenant("starter")
        await fill(h, admin, 6)
        # Two processes on one database, creating at once: the tenant's row lock makes them take turns.
        racers = [create(server, admin, f"racer {n}") for n in range(5) for server in (h, h2)]
        results = await asyncio.gather(*racers)
        assert sorted(status for status, _ in results) == [201] * 4 + [403] * 6
        assert len(await repo.list_keys(h.gateway.db, admin.id)) == 10
