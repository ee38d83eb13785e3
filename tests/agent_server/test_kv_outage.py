"""MemoryKV's amortised expiry sweep, and RedisKV against a Redis that is not there: it fails fast,
its breaker opens, and it recovers when Redis answers again."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.storage.breaker import Breaker
from agent_server.storage.kv import KVUnavailable, MemoryKV, RedisKV
from tests.conftest import free_port


async def test_expired_entries_that_are_never_read_again_are_swept_by_later_writes() -> None:
    clock = ManualClock()
    kv = MemoryKV(clock, sweep_every=1.0)
    for n in range(1000):  # e.g. one rate-limit counter per client IP seen once
        await kv.incr(f"rl:ip-{n}", ttl=60)
    await kv.set("kept", b"no ttl")
    await kv.set("later", b"v", ttl=600)
    assert len(kv._values) == 1002
    clock.advance(61)
    await kv.incr("rl:new-window", ttl=60)  # any write sweeps (at most once per second)
    assert set(kv._values) == {"kept", "later", "rl:new-window"}


async def test_the_sweep_runs_at_most_once_per_interval() -> None:
    clock = ManualClock()
    kv = MemoryKV(clock, sweep_every=1.0)
    await kv.set("a", b"1", ttl=0.5)
    clock.advance(1.0)
    await kv.set("b", b"2", ttl=0.1)  # sweeps: "a" is gone
    assert "a" not in kv._values
    clock.advance(0.5)
    await kv.set("c", b"3")  # "b" has expired, but the next sweep is not due yet
    assert "b" in kv._values
    clock.advance(0.6)
    await kv.set("d", b"4")
    assert "b" not in kv._values and await kv.get("c") == b"3"


def test_the_breaker_opens_after_failures_in_a_row_and_half_opens_after_the_cooldown() -> None:
    breaker = Breaker(failures=3, cooldown=0.05)
    assert not breaker.failure() and not breaker.failure() and not breaker.open
    assert breaker.failure() and breaker.open
    time.sleep(0.06)
    assert not breaker.open  # half-open: one call may try
    assert breaker.failure() and breaker.open  # one more failure opens it again
    time.sleep(0.06)
    breaker.success()
    assert not breaker.open and not breaker.failure()  # closed: counting from zero again


async def test_a_dead_redis_fails_fast_and_the_breaker_skips_it() -> None:
    kv = RedisKV(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    try:
        started = time.monotonic()
        for _ in range(3):
            with pytest.raises(KVUnavailable):
                await kv.incr("k", ttl=10)
        assert kv.breaker.open
        for _ in range(100):  # open: no connection attempt at all
            with pytest.raises(KVUnavailable, match="breaker open"):
                await kv.get("k")
        with pytest.raises(KVUnavailable):
            await kv.ping()
        assert time.monotonic() - started < 1.0
    finally:
        await kv.close()


async def test_redis_kv_recovers_once_redis_answers(redis_url: str) -> None:
    kv = RedisKV(redis_url, timeout=0.5, prefix="agentgate-test-breaker:")
    kv.breaker = Breaker(failures=1, cooldown=0.05)
    try:
        kv.breaker.failure()  # as if Redis had just failed
        with pytest.raises(KVUnavailable):
            await kv.ping()
        await asyncio.sleep(0.06)
        assert await kv.ping() is True and not kv.breaker.open
    finally:
        await kv.close()
