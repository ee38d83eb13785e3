"""Sign-in throttling slows guessers down without ever locking the right password out from everywhere."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.errors import RateLimited
from agent_server.gateway.login_throttle import (
    FREE_PER_ACCOUNT,
    FREE_PER_ADDRESS,
    FREE_PER_PAIR,
    MAX_DELAY,
    LoginThrottle,
    delay_after,
)
from agent_server.storage.kv import MemoryKV, RedisKV
from tests.conftest import BASE_URL, free_port
from tests.gateway.conftest import PASSWORD, Harness, TenantAdmin

WRONG = "not the right password"


def from_address(harness: Harness, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(harness.app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


async def login(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    return await client.post("/admin/auth/login", json={"email": email, "password": password})


async def test_eleven_wrong_passwords_from_one_address_do_not_stop_another(harness: Harness) -> None:
    admin = await harness.tenant()
    async with (
        from_address(harness, "198.51.100.1") as guesser,
        from_address(harness, "203.0.113.5") as owner,
    ):
        for _ in range(11):
            assert (await login(guesser, admin.email, WRONG)).status_code == 401
        assert (await login(guesser, admin.email, PASSWORD)).status_code == 429  # that address waits
        signed_in = await login(owner, admin.email, PASSWORD)
        assert signed_in.status_code == 200 and signed_in.json()["access_token"]


async def test_delays_grow_and_only_one_attempt_passes_each_delay(harness: Harness) -> None:
    admin = await harness.tenant()
    async with from_address(harness, "198.51.100.2") as guesser:
        for _ in range(FREE_PER_PAIR):  # the free attempts: answered at once
            assert (await login(guesser, admin.email, WRONG)).status_code == 401
        waits = []
        for _ in range(4):
            assert (await login(guesser, admin.email, WRONG)).status_code == 401  # claims the delay
            refused = await login(guesser, admin.email, PASSWORD)
            assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"
            waits.append(int(refused.headers["Retry-After"]))
            harness.clock.advance(waits[-1])
        assert waits == [1, 2, 4, 8]
        # Twenty at once when a delay ends: one is checked, the others wait (no parallel guessing).
        answers = await asyncio.gather(*(login(guesser, admin.email, WRONG) for _ in range(20)))
        assert sorted(a.status_code for a in answers) == [401] + [429] * 19
        harness.clock.advance(32)
        assert (await login(guesser, admin.email, PASSWORD)).status_code == 200  # a delay, not a lockout
        # Success clears that address's failures for the account: the next mistake is free again.
        assert (await login(guesser, admin.email, WRONG)).status_code == 401
        assert (await login(guesser, admin.email, PASSWORD)).status_code == 200


async def spread_failures(harness: Harness, admin: TenantAdmin, count: int) -> None:
    async def one(n: int) -> int:
        async with from_address(harness, f"192.0.2.{n + 1}") as client:
            return (await login(client, admin.email, WRONG)).status_code

    assert set(await asyncio.gather(*(one(n) for n in range(count)))) == {401}


async def test_a_distributed_attack_slows_new_addresses_but_not_the_owners_usual_one(
    harness: Harness,
) -> None:
    admin = await harness.tenant()
    async with from_address(harness, "203.0.113.7") as usual:
        assert (await login(usual, admin.email, PASSWORD)).status_code == 200  # the owner, earlier
        await spread_failures(harness, admin, FREE_PER_ACCOUNT)  # one guess from each of many addresses
        async with from_address(harness, "198.51.100.99") as stranger:
            assert (await login(stranger, admin.email, WRONG)).status_code == 401  # starts the delays
            assert (await login(stranger, admin.email, PASSWORD)).status_code == 429
        assert (await login(usual, admin.email, PASSWORD)).status_code == 200


async def test_one_address_guessing_many_accounts_is_slowed_down() -> None:
    throttle = LoginThrottle(MemoryKV(), ManualClock())
    for n in range(FREE_PER_ADDRESS + 1):  # one failure on each of many accounts
        await throttle.failed(await throttle.admit(f"user{n}@example.com", "198.51.100.3"))
    with pytest.raises(RateLimited) as refused:
        await throttle.admit("someone-else@example.com", "198.51.100.3")
    assert refused.value.retry_after == 1
    await throttle.admit("someone-else@example.com", "198.51.100.4")  # another address is not slowed


def test_delays_double_from_one_second_up_to_fifteen_minutes() -> None:
    assert [delay_after(FREE_PER_PAIR + n, FREE_PER_PAIR) for n in range(4)] == [1, 2, 4, 8]
    assert delay_after(FREE_PER_PAIR - 1, FREE_PER_PAIR) == 0
    assert delay_after(10_000, FREE_PER_PAIR) == MAX_DELAY == 900


async def test_sign_in_still_works_when_the_throttles_store_is_down() -> None:
    store = RedisKV(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    throttle = LoginThrottle(store, ManualClock())
    try:
        for _ in range(FREE_PER_PAIR + 2):
            attempt = await throttle.admit("owner@example.com", "198.51.100.5")
            await throttle.failed(attempt)
        await throttle.succeeded(await throttle.admit("owner@example.com", "198.51.100.5"))
    finally:
        await store.close()
