"""Our GCRA limiter (agent_server/policies/ratelimit.py) against the `limits` library, for the same limits.

Run: ``.venv/bin/python bench/ratelimit/compare.py [--checks 20000] [--tasks 64] [--redis URL]``.
Prints two Markdown tables: the cost of one check (in process and on Redis), and what a burst gets
through a 60/min limit. Redis keys use the prefix ``bench:rl:`` and are deleted before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import math
import statistics
import time
import types
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis
from limits import RateLimitItemPerSecond
from limits.aio import strategies
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.aio.storage import memory as limits_memory
from limits.aio.storage.redis import redispy as limits_redispy
from redis.asyncio.connection import AbstractConnection

from agent_server.foundation.clock import Clock, ManualClock, SystemClock
from agent_server.policies.ratelimit import Limiter
from agent_server.storage.kv import MemoryKV, RedisKV

PREFIX = "bench:rl:"
BOUNDARY = 1_800_000_000.0  # a multiple of 60: a minute boundary for the aligned sliding window counter
_subjects = itertools.count()
_replies = 0  # replies read by any redis-py connection: one per round trip (nothing is pipelined)


def _count_replies(read: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        global _replies
        _replies += 1
        return await read(*args, **kwargs)

    return counted


AbstractConnection.read_response = _count_replies(AbstractConnection.read_response)  # type: ignore[method-assign]


def subject() -> str:
    return f"s{next(_subjects)}"


@dataclass
class Candidate:
    name: str
    store: str
    hit: Callable[[str], Awaitable[bool]]
    retry_after: Callable[[str], Awaitable[float]]  # a refused request's wait, as Retry-After says it
    movable: bool  # its time can be moved (our Clock, or `limits` reading time.time() in Python)


@dataclass
class Env:
    redis_url: str
    kv: RedisKV
    pool: aredis.ConnectionPool


def ours(env: Env, store: str, clock: Clock, limit: int, window: int) -> Candidate:
    limiter = Limiter(env.kv if store == "redis" else MemoryKV(), clock)

    async def hit(s: str) -> bool:
        return (await limiter.acquire(s, limit, window)).allowed

    async def retry_after(s: str) -> float:  # one refused request more: it does not move the TAT
        return (await limiter.acquire(s, limit, window)).retry_after

    return Candidate("agentgate GCRA", store, hit, retry_after, movable=True)


LIBRARY: list[tuple[str, type[strategies.RateLimiter], bool]] = [
    ("limits moving window", strategies.MovingWindowRateLimiter, False),
    ("limits moving window + get_window_stats", strategies.MovingWindowRateLimiter, True),
    ("limits sliding window counter", strategies.SlidingWindowCounterRateLimiter, False),
    ("limits fixed window", strategies.FixedWindowRateLimiter, False),
]


def theirs(
    env: Env, store: str, clock: Clock, limit: int, window: int, entry: tuple[str, Any, bool]
) -> Candidate:
    name, strategy, with_stats = entry
    storage = (
        RedisStorage(
            "async+" + env.redis_url,
            implementation="redispy",
            key_prefix=PREFIX + "limits",
            connection_pool=env.pool,
        )
        if store == "redis"
        else MemoryStorage()
    )
    limiter, item = strategy(storage), RateLimitItemPerSecond(limit, window)

    async def hit(s: str) -> bool:
        allowed = await limiter.hit(item, s)
        if with_stats:  # what the RateLimit-* headers need: a second call (a second round trip)
            await limiter.get_window_stats(item, s)
        return bool(allowed)

    async def retry_after(s: str) -> float:
        await limiter.hit(item, s)
        return max(0.0, (await limiter.get_window_stats(item, s)).reset_time - clock.now())

    # On Redis only the moving window takes its time from Python; the others count on Redis TTLs.
    movable = store == "memory" or strategy is strategies.MovingWindowRateLimiter
    return Candidate(name, store, hit, retry_after, movable)


def candidates(env: Env, clock: Clock, limit: int, window: int, stats: bool = True) -> list[Candidate]:
    found = []
    for store in ("memory", "redis"):
        found.append(ours(env, store, clock, limit, window))
        found += [theirs(env, store, clock, limit, window, e) for e in LIBRARY if stats or not e[2]]
    return found


@contextlib.contextmanager
def limits_time(clock: ManualClock) -> Iterator[None]:
    """`limits` reads time.time() in these modules: point them at the manual clock for a while."""
    modules = [limits_memory, limits_redispy, strategies]
    saved = [m.time for m in modules]  # type: ignore[attr-defined]
    for m in modules:
        m.time = types.SimpleNamespace(time=clock.now)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m, real in zip(modules, saved, strict=True):
            m.time = real  # type: ignore[attr-defined]


async def redis_counters(admin: aredis.Redis) -> tuple[int, float]:
    """Server-wide commands processed (script-internal calls included) and CPU seconds of Redis."""
    stats, cpu = await admin.info("stats"), await admin.info("cpu")
    return int(stats["total_commands_processed"]), float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def sequential(c: Candidate, n: int) -> tuple[float, float, int]:
    """Median wall and process-CPU µs of one check, and how many of the ``n`` checks passed."""
    s, walls, cpus, passed = subject(), [], [], 0
    for _ in range(n):
        w0, c0 = time.perf_counter_ns(), time.process_time_ns()
        passed += await c.hit(s)
        cpus.append(time.process_time_ns() - c0)
        walls.append(time.perf_counter_ns() - w0)
    return statistics.median(walls) / 1000, statistics.median(cpus) / 1000, passed


async def concurrent(c: Candidate, n: int, tasks: int) -> tuple[float, float]:
    """Wall and process-CPU µs per check with ``tasks`` coroutines hitting one subject at once."""
    s, per = subject(), n // tasks

    async def worker() -> None:
        for _ in range(per):
            await c.hit(s)

    w0, c0 = time.perf_counter_ns(), time.process_time_ns()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    wall, cpu = time.perf_counter_ns() - w0, time.process_time_ns() - c0
    return wall / 1000 / (per * tasks), cpu / 1000 / (per * tasks)


async def cost_rows(env: Env, admin: aredis.Redis, n: int, tasks: int) -> None:
    global _replies
    for label, limit, window in (("60/min", 60, 60), ("1000/s", 1000, 1)):
        for c in candidates(env, SystemClock(), limit, window):
            warm = subject()
            for _ in range(200):  # loads the Lua scripts, fills the pools
                await c.hit(warm)
            before, replies0 = await redis_counters(admin), _replies
            wall, cpu, passed = await sequential(c, n)
            replies, after = _replies - replies0, await redis_counters(admin)
            cwall, ccpu = await concurrent(c, n, tasks)
            redis_cols = (
                [
                    f"{replies / n:.2f}",
                    f"{(after[0] - before[0]) / n:.2f}",
                    f"{(after[1] - before[1]) * 1e6 / n:.1f}",
                ]
                if c.store == "redis"
                else ["0", "-", "-"]
            )
            print(
                f"| {c.name} | {c.store} | {label} | {wall:.1f} | {cpu:.1f} | {passed} | "
                f"{cwall:.1f} | {ccpu:.1f} | " + " | ".join(redis_cols) + " |",
                flush=True,
            )


async def burst(c: Candidate, s: str, size: int) -> int:
    return sum(await asyncio.gather(*(c.hit(s) for _ in range(size))))


def at(clock: ManualClock, t: float) -> None:
    clock.advance(t - clock.now())


async def edge(c: Candidate, clock: ManualClock) -> str:
    """1 request at B-60 (a TTL-based fixed window then ends at B), 200 at B-1, 200 at B+1."""
    s = subject()
    at(clock, BOUNDARY - 60)
    first = int(await c.hit(s))
    at(clock, BOUNDARY - 1)
    before = await burst(c, s, 200)
    at(clock, BOUNDARY + 1)
    after = await burst(c, s, 200)
    return f"{first} + {before} + {after} = {first + before + after}"


async def steady(c: Candidate, clock: ManualClock) -> str:
    """200 at once at B-30, then one request a second up to B+29: all inside one 60 s span."""
    s = subject()
    at(clock, BOUNDARY - 30)
    first = await burst(c, s, 200)
    later = 0
    for _ in range(59):
        clock.advance(1)
        later += await c.hit(s)
    return f"{first} + {later} = {first + later}"


async def correctness_rows(env: Env) -> None:
    clock = ManualClock(BOUNDARY - 120)
    with limits_time(clock):
        for c in candidates(env, clock, 60, 60, stats=False):
            at(clock, BOUNDARY - 120)
            s = subject()
            once = await burst(c, s, 200)
            retry = max(1, math.ceil(await c.retry_after(s)))  # the header: whole seconds, at least 1
            spans = [await edge(c, clock), await steady(c, clock)] if c.movable else ["n/a"] * 2
            print(f"| {c.name} | {c.store} | {once} | {retry} | " + " | ".join(spans) + " |", flush=True)


async def clean(admin: aredis.Redis) -> None:
    async for key in admin.scan_iter(match=PREFIX + "*", count=1000):
        await admin.delete(key)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=20_000, help="checks per run (sequential, concurrent)")
    parser.add_argument("--tasks", type=int, default=64, help="coroutines in the concurrent run")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    admin = aredis.from_url(args.redis)
    env = Env(args.redis, RedisKV(args.redis, prefix=PREFIX), aredis.ConnectionPool.from_url(args.redis))
    await clean(admin)
    try:
        print("## Cost of one check\n")
        print(
            "| limiter | store | limit | wall µs (median, sequential) | CPU µs (median, sequential) "
            f"| passed of {args.checks} | wall µs/check ({args.tasks} tasks) | CPU µs/check ({args.tasks} tasks) "
            "| round trips/check | Redis commands/check | Redis CPU µs/check |"
        )
        print("|" + "---|" * 11, flush=True)
        await cost_rows(env, admin, args.checks, args.tasks)
        print("\n## 60/min: what a burst gets through\n")
        print(
            "| limiter | store | passes of 200 at once | Retry-After on the 201st (s) "
            "| 1 at B-60, 200 at B-1, 200 at B+1 | 200 at B-30, then 1/s for 59 s |"
        )
        print("|---|---|---|---|---|---|", flush=True)
        await correctness_rows(env)
    finally:
        await clean(admin)
        await env.kv.close()
        await env.pool.disconnect()
        await admin.aclose()


if __name__ == "__main__":
    asyncio.run(main())
