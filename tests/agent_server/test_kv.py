"""One KV contract, run against MemoryKV (ManualClock) and RedisKV (a real Redis).

Time: MemoryKV tests move a ManualClock. Redis keeps its own clock, so its expiry cases use short
real TTLs and a short wait, and everything else checks the TTL Redis reports instead of waiting.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.storage.kv import KV, MemoryKV, RedisKV


@dataclass
class Case:
    """A KV under test plus how to let a TTL run out on it."""

    kv: KV
    name: str
    short_ttl: float  # a TTL that expire() is sure to outlast
    clock: ManualClock | None = None

    async def expire(self) -> None:
        if self.clock is not None:
            self.clock.advance(self.short_ttl + 0.001)
        else:  # Redis expires keys by its own clock: wait a little longer than the TTL
            await asyncio.sleep(self.short_ttl + 0.15)

    async def reported_ttl(self, key: str) -> float | None:
        """Seconds left as the store itself reports them (Redis PTTL; MemoryKV's expiry minus now)."""
        if isinstance(self.kv, RedisKV):
            pttl = await self.kv.client.pttl(self.kv.prefix + key)
            return None if pttl < 0 else pttl / 1000
        assert isinstance(self.kv, MemoryKV) and self.clock is not None
        expires = self.kv._values[key][1]
        return None if expires is None else expires - self.clock.now()


@pytest.fixture(params=["memory", "redis"])
async def case(request: pytest.FixtureRequest) -> AsyncIterator[Case]:
    if request.param == "memory":
        clock = ManualClock()
        kv = MemoryKV(clock)
        yield Case(kv, "memory", short_ttl=5.0, clock=clock)
        await kv.close()
        return
    url = request.getfixturevalue("redis_url")
    prefix = f"agentgate-test:{uuid.uuid4().hex}:"
    redis_kv = RedisKV(url, prefix=prefix)
    try:
        yield Case(redis_kv, "redis", short_ttl=0.2)
    finally:
        keys = [key async for key in redis_kv.client.scan_iter(match=f"{prefix}*")]
        if keys:
            await redis_kv.client.delete(*keys)
        await redis_kv.close()


async def test_get_of_a_missing_key_is_none(case: Case) -> None:
    assert await case.kv.get("missing") is None


async def test_set_then_get_returns_the_bytes(case: Case) -> None:
    await case.kv.set("k", b"\x00value\xff")
    assert await case.kv.get("k") == b"\x00value\xff"
    await case.kv.set("k", b"second")
    assert await case.kv.get("k") == b"second"


async def test_value_with_ttl_expires(case: Case) -> None:
    await case.kv.set("k", b"v", ttl=case.short_ttl)
    ttl = await case.reported_ttl("k")
    assert ttl is not None and 0 < ttl <= case.short_ttl
    assert await case.kv.get("k") == b"v"
    await case.expire()
    assert await case.kv.get("k") is None


async def test_set_without_ttl_removes_an_earlier_ttl(case: Case) -> None:
    await case.kv.set("k", b"v", ttl=case.short_ttl)
    await case.kv.set("k", b"kept")
    assert await case.reported_ttl("k") is None
    await case.expire()
    assert await case.kv.get("k") == b"kept"


async def test_set_if_absent_stores_only_once(case: Case) -> None:
    assert await case.kv.set_if_absent("k", b"first") is True
    assert await case.kv.set_if_absent("k", b"second") is False
    assert await case.kv.get("k") == b"first"


async def test_set_if_absent_succeeds_again_after_expiry(case: Case) -> None:
    assert await case.kv.set_if_absent("k", b"first", ttl=case.short_ttl) is True
    assert await case.kv.set_if_absent("k", b"second", ttl=case.short_ttl) is False
    await case.expire()
    assert await case.kv.set_if_absent("k", b"third") is True
    assert await case.kv.get("k") == b"third"


async def test_set_if_absent_under_concurrency_has_one_winner(case: Case) -> None:
    wins = await asyncio.gather(*(case.kv.set_if_absent("lock", str(i).encode()) for i in range(50)))
    assert wins.count(True) == 1
    winner = wins.index(True)
    assert await case.kv.get("lock") == str(winner).encode()


async def test_delete_removes_and_ignores_missing_keys(case: Case) -> None:
    await case.kv.set("k", b"v")
    await case.kv.delete("k")
    assert await case.kv.get("k") is None
    await case.kv.delete("never-existed")  # no error
    assert await case.kv.set_if_absent("k", b"again") is True


async def test_take_returns_the_value_once(case: Case) -> None:
    await case.kv.set("once", b"v", ttl=60)
    assert await case.kv.take("once") == b"v"
    assert await case.kv.take("once") is None
    assert await case.kv.get("once") is None


async def test_take_under_concurrency_has_one_winner(case: Case) -> None:
    await case.kv.set("race", b"v", ttl=60)
    results = await asyncio.gather(*(case.kv.take("race") for _ in range(20)))
    assert results.count(b"v") == 1 and results.count(None) == 19


async def test_take_of_an_expired_value_is_none(case: Case) -> None:
    await case.kv.set("gone", b"v", ttl=case.short_ttl)
    await case.expire()
    assert await case.kv.take("gone") is None


async def test_incr_counts_and_reads_back_as_bytes(case: Case) -> None:
    assert await case.kv.incr("n") == (1, None)
    assert await case.kv.incr("n", 5) == (6, None)
    assert await case.kv.incr("n", -2) == (4, None)
    assert await case.kv.get("n") == b"4"


async def test_incr_is_atomic_under_200_concurrent_calls(case: Case) -> None:
    results = await asyncio.gather(*(case.kv.incr("hits", ttl=60) for _ in range(200)))
    values = sorted(value for value, _ in results)
    assert values == list(range(1, 201))  # every caller saw a distinct count
    assert await case.kv.get("hits") == b"200"
    ttl = await case.reported_ttl("hits")
    assert ttl is not None and 0 < ttl <= 60


async def test_incr_ttl_starts_when_the_key_is_created(case: Case) -> None:
    value, left = await case.kv.incr("window", ttl=10)
    assert value == 1 and left is not None and 9 < left <= 10
    if case.clock is not None:
        case.clock.advance(4)
    # a later call with another TTL neither restarts nor extends the window
    value, left = await case.kv.incr("window", ttl=100)
    assert value == 2 and left is not None and left <= 10
    if case.clock is not None:
        assert left == pytest.approx(6)
    reported = await case.reported_ttl("window")
    assert reported is not None and reported <= 10


async def test_incr_window_restarts_after_expiry(case: Case) -> None:
    await case.kv.incr("window", ttl=case.short_ttl)
    await case.kv.incr("window", ttl=case.short_ttl)
    await case.expire()
    value, left = await case.kv.incr("window", ttl=case.short_ttl)
    assert value == 1 and left is not None and 0 < left <= case.short_ttl


async def test_incr_of_a_counter_back_at_zero_keeps_its_window(case: Case) -> None:
    await case.kv.incr("window", 1, ttl=10)
    await case.kv.incr("window", -1, ttl=10)
    if case.clock is not None:
        case.clock.advance(4)
    value, left = await case.kv.incr("window", 1, ttl=100)  # value == amount, yet not created now
    assert value == 1 and left is not None and left <= 10


async def test_push_pop_is_first_in_first_out(case: Case) -> None:
    for item in (b"one", b"two", b"three"):
        await case.kv.push("q", item)
    assert [await case.kv.pop("q") for _ in range(3)] == [b"one", b"two", b"three"]
    assert await case.kv.pop("q") is None


async def test_queues_are_separate(case: Case) -> None:
    await case.kv.push("a", b"for-a")
    assert await case.kv.pop("b") is None
    assert await case.kv.pop("a") == b"for-a"


async def test_pop_with_timeout_returns_none_when_nothing_arrives(case: Case) -> None:
    started = time.monotonic()
    assert await case.kv.pop("empty", timeout=0.3) is None
    waited = time.monotonic() - started
    assert 0.25 <= waited < 2.0  # it did wait, and it did not hang


async def test_pop_with_timeout_returns_an_item_pushed_during_the_wait(case: Case) -> None:
    started = time.monotonic()
    waiter = asyncio.create_task(case.kv.pop("q", timeout=5))
    await asyncio.sleep(0.1)  # the waiter is blocked by now
    assert not waiter.done()
    await case.kv.push("q", b"late")
    assert await asyncio.wait_for(waiter, 3) == b"late"
    assert time.monotonic() - started < 2.5  # woken by the push, not by the timeout


async def test_two_waiters_each_get_one_item(case: Case) -> None:
    first = asyncio.create_task(case.kv.pop("q", timeout=5))
    second = asyncio.create_task(case.kv.pop("q", timeout=5))
    await asyncio.sleep(0.1)
    await case.kv.push("q", b"x")
    done, _ = await asyncio.wait({first, second}, timeout=3, return_when=asyncio.FIRST_COMPLETED)
    assert [task.result() for task in done] == [b"x"]
    # the other waiter is still waiting (not woken with None) and takes the next item
    await asyncio.sleep(0.05)
    assert sum(task.done() for task in (first, second)) == 1
    await case.kv.push("q", b"y")
    results = await asyncio.wait_for(asyncio.gather(first, second), 3)
    assert sorted(results) == [b"x", b"y"]


async def test_ping(case: Case) -> None:
    assert await case.kv.ping() is True
