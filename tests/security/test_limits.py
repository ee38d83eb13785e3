"""The per-key limit has no boundary burst (GCRA), and it is exact across processes sharing Redis."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.kv import MemoryKV, RedisKV
from tests.gateway.conftest import Harness, HarnessFactory

ROOT = Path(__file__).resolve().parents[2]


def passed(responses: list[httpx.Response]) -> int:
    return sum(r.status_code == 200 for r in responses)


async def bursts_around_a_minute_boundary(harness: Harness) -> tuple[int, int]:
    _, key = await harness.key(await harness.tenant("starter"))  # 60 requests per minute
    clock = harness.clock
    clock.advance(60 - clock.now() % 60 - 1)  # one second before a minute boundary
    before = await asyncio.gather(*(harness.chat(key) for _ in range(60)))
    clock.advance(2)  # one second after it
    after = await asyncio.gather(*(harness.chat(key) for _ in range(60)))
    return passed(before), passed(after)


async def test_a_burst_either_side_of_a_minute_boundary_passes_62_not_120(harness: Harness) -> None:
    # A fixed window let both bursts through (120 in two seconds); GCRA refills one per second.
    assert await bursts_around_a_minute_boundary(harness) == (60, 2)


@pytest.mark.redis
async def test_no_boundary_burst_with_redis_either(
    make_harness: HarnessFactory, redis_url: str, tmp_path: Path
) -> None:
    async with make_harness(redis_url=redis_url, data_dir=tmp_path / "redis") as harness:
        assert await bursts_around_a_minute_boundary(harness) == (60, 2)


@pytest.mark.redis
def test_two_processes_on_one_redis_pass_exactly_the_limit(redis_url: str) -> None:
    """Two OS processes, 100 concurrent hits each at once, on one 60/min key: 60 pass, plus at most
    what the refill (one per second, real time here) gives during the bursts."""
    prefix, key_id = f"agentgate-test-limits:{uuid.uuid4().hex}:", f"key_{uuid.uuid4().hex[:12]}"
    start_at = time.time() + 3  # both processes have imported and connected by then
    command = [sys.executable, "-m", "tests.security.limiter_process", redis_url, prefix, key_id, "100"]
    processes = [
        subprocess.Popen([*command, repr(start_at)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    counts = [int(process.communicate(timeout=60)[0].strip()) for process in processes]
    elapsed = time.time() - start_at
    assert all(count > 0 for count in counts), counts  # both processes got a share
    assert 60 <= sum(counts) <= 60 + int(elapsed) and sum(counts) <= 62, (counts, elapsed)


async def shared_policy_is_exact(limiter_a: Limiter, limiter_b: Limiter) -> list[bool]:
    policy = Policy(f"p-{uuid.uuid4().hex[:8]}", 10, 3600)
    usages = await asyncio.gather(
        *(limiter.hit(policy, "203.0.113.9") for limiter in (limiter_a, limiter_b) for _ in range(15))
    )
    return [usage.allowed for usage in usages]


async def test_limiters_over_one_in_process_kv_share_their_subjects() -> None:
    clock, kv = ManualClock(), MemoryKV()
    allowed = await shared_policy_is_exact(Limiter(kv, clock), Limiter(kv, clock))
    assert sum(allowed) == 10
    other = await Limiter(MemoryKV(), clock).hit(Policy("x", 1, 60), "203.0.113.9")
    assert other.allowed  # another KV (another process) has its own table


@pytest.mark.redis
async def test_the_site_policies_share_the_same_redis_script(redis_url: str) -> None:
    clock, prefix = ManualClock(), f"agentgate-test-limits:{uuid.uuid4().hex}:"
    kv_a, kv_b = RedisKV(redis_url, prefix=prefix), RedisKV(redis_url, prefix=prefix)
    try:
        assert sum(await shared_policy_is_exact(Limiter(kv_a, clock), Limiter(kv_b, clock))) == 10
    finally:
        await kv_a.close()
        await kv_b.close()


async def test_spent_tokens_count_past_the_limit_and_refill_smoothly() -> None:
    clock = ManualClock()
    limiter, budget = Limiter(MemoryKV(), clock), Policy("tokens", 100, 100)  # one token per second
    assert (await limiter.spend(budget, "site", 130)).remaining == 0  # tokens already used count
    assert not (await limiter.hit(budget, "site")).allowed
    assert (await limiter.peek(budget, "site")).reset == 130
    clock.advance(31)  # 30 s pay the overshoot back, the 31st second refills one token
    assert (await limiter.peek(budget, "site")).remaining == 1
    usage = await limiter.hit(budget, "site", 5)
    assert not usage.allowed and usage.retry_after == 4 and usage.headers()["Retry-After"] == "4"
