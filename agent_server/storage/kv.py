"""Shared state behind one small interface: values with TTL, atomic counters, queues.

``MemoryKV`` keeps everything in the process (the embedded default); ``RedisKV`` shares it across
processes and hosts. Both pass the same contract tests (tests/storage/test_kv.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from agent_server.foundation.clock import Clock, SystemClock
from agent_server.foundation.tasks import wait_for_event
from agent_server.storage.breaker import Breaker

log = logging.getLogger("agentgate.kv")
T = TypeVar("T")


class KV(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None: ...

    async def set_if_absent(self, key: str, value: bytes, ttl: float | None = None) -> bool:
        """Store only when the key is missing; True when this call stored it."""
        ...

    async def delete(self, key: str) -> None: ...

    async def take(self, key: str) -> bytes | None:
        """Read and delete in one step: of concurrent takers of one value, exactly one gets it."""
        ...

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> tuple[int, float | None]:
        """Add atomically; the TTL starts when the key is created. Returns (value, seconds left)."""
        ...

    async def push(self, queue: str, value: bytes) -> None: ...

    async def pop(self, queue: str, timeout: float = 0) -> bytes | None:
        """Take the oldest item, waiting up to ``timeout`` seconds; None when empty."""
        ...

    async def ping(self) -> bool: ...

    async def close(self) -> None: ...


class MemoryKV:
    """In-process KV. Single event loop, so each method is atomic without locks.

    Entries expire when read, and writes sweep every expired entry at most once per
    ``sweep_every`` seconds of clock time: without the sweep, TTL'd keys never read again (a
    client IP seen once, a finished rate-limit window) would stay in memory for ever.
    """

    def __init__(self, clock: Clock | None = None, *, sweep_every: float = 1.0) -> None:
        self.clock = clock or SystemClock()
        self._values: dict[str, tuple[bytes | int, float | None]] = {}
        self._queues: dict[str, deque[bytes]] = {}
        self._queue_ready: dict[str, asyncio.Event] = {}
        self.sweep_every = sweep_every
        self._next_sweep = self.clock.now() + sweep_every

    def _sweep(self) -> None:
        """Drop expired entries, amortised: one O(n) pass per ``sweep_every`` seconds at most."""
        now = self.clock.now()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.sweep_every
        expired = [
            key for key, (_, expires) in self._values.items() if expires is not None and expires <= now
        ]
        for key in expired:
            del self._values[key]

    def _live(self, key: str) -> tuple[bytes | int, float | None] | None:
        item = self._values.get(key)
        if item is None:
            return None
        if item[1] is not None and item[1] <= self.clock.now():
            del self._values[key]
            return None
        return item

    def _expiry(self, ttl: float | None) -> float | None:
        return None if ttl is None else self.clock.now() + ttl

    async def get(self, key: str) -> bytes | None:
        item = self._live(key)
        if item is None:
            return None
        value = item[0]
        return str(value).encode() if isinstance(value, int) else value

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        self._sweep()
        self._values[key] = (value, self._expiry(ttl))

    async def set_if_absent(self, key: str, value: bytes, ttl: float | None = None) -> bool:
        self._sweep()
        if self._live(key) is not None:
            return False
        self._values[key] = (value, self._expiry(ttl))
        return True

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    async def take(self, key: str) -> bytes | None:
        value = await self.get(key)
        self._values.pop(key, None)
        return value

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> tuple[int, float | None]:
        self._sweep()
        item = self._live(key)
        if item is None:
            value, expires = amount, self._expiry(ttl)
        else:
            value, expires = int(item[0]) + amount, item[1]
        self._values[key] = (value, expires)
        left = None if expires is None else max(0.0, expires - self.clock.now())
        return value, left

    async def push(self, queue: str, value: bytes) -> None:
        self._queues.setdefault(queue, deque()).append(value)
        self._queue_ready.setdefault(queue, asyncio.Event()).set()

    async def pop(self, queue: str, timeout: float = 0) -> bytes | None:
        items = self._queues.setdefault(queue, deque())
        ready = self._queue_ready.setdefault(queue, asyncio.Event())
        # Real time on purpose: a blocking pop waits like BLPOP does, whatever the clock says.
        deadline = time.monotonic() + timeout
        while not items and (left := deadline - time.monotonic()) > 0:
            ready.clear()
            if not await wait_for_event(ready, left):
                break
            # another waiter may have taken the item first: wait again for the time that is left
        return items.popleft() if items else None

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        self._values.clear()


# INCRBY, and set the expiry only when this call created the key: one round trip, atomic. (Testing
# "value == amount" instead would restart the window of a counter that went back to zero.)
_INCR_WITH_TTL = """
local created = redis.call('EXISTS', KEYS[1]) == 0
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if created and tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {value, redis.call('PTTL', KEYS[1])}
"""
# Drop the first ARGV[1] items of a list and release the lock KEYS[2], only while the caller
# (token ARGV[2]) still holds that lock: a holder whose lock expired must not trim the items a
# newer holder has not stored yet.
_TRIM_IF_OWNER = """
if redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
if tonumber(ARGV[1]) > 0 then
  redis.call('LTRIM', KEYS[1], ARGV[1], -1)
end
redis.call('DEL', KEYS[2])
return 1
"""


class KVUnavailable(ConnectionError):
    """The shared store cannot be reached (or its breaker is open); callers choose their policy."""


class RedisKV:
    """KV on Redis. Every call has a short socket timeout (connect and read), the pool is bounded,
    redis-py retries nothing, and a breaker skips Redis for a few seconds after failures in a row,
    so a dead or hung Redis costs at most one timeout per few calls, never a hang."""

    def __init__(
        self, url: str, *, timeout: float = 0.5, prefix: str = "agentgate:", max_connections: int = 1000
    ) -> None:
        import redis.asyncio as redis  # imported here so the embedded default needs no Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        self.prefix = prefix
        self.timeout = timeout
        self.breaker = Breaker()
        self._outage = (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError)
        # redis-py's pool refuses a call past max_connections ("Too many connections") instead of
        # waiting, and its default of 100 broke under a burst of concurrent requests: size it for
        # bursts. (Its BlockingConnectionPool waits instead, but hung intermittently under load here.)
        self.client = redis.from_url(
            url,
            max_connections=max_connections,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            health_check_interval=30,
            retry=Retry(NoBackoff(), 0),  # explicit: newer redis-py retries with backoff by default
        )
        self._incr = self.client.register_script(_INCR_WITH_TTL)
        self._trim = self.client.register_script(_TRIM_IF_OWNER)

    def _k(self, key: str) -> str:
        return self.prefix + key

    async def guarded(self, call: Coroutine[Any, Any, T]) -> T:
        """Await one Redis call through the breaker; an outage becomes ``KVUnavailable``."""
        if self.breaker.open:
            call.close()
            raise KVUnavailable("Redis is unavailable (breaker open)")
        try:
            result = await call
        except self._outage as exc:
            if self.breaker.failure():
                # Drop every pooled connection: after a Redis restart each stale one would fail
                # once more, and each such failure would re-open the breaker.
                with contextlib.suppress(Exception):
                    await self.client.connection_pool.disconnect()
                log.warning(
                    "Redis failing (%s); skipping it for %.0f s", type(exc).__name__, self.breaker.cooldown
                )
            raise KVUnavailable(f"Redis is unavailable ({type(exc).__name__})") from exc
        self.breaker.success()
        return result

    async def get(self, key: str) -> bytes | None:
        return await self.guarded(self.client.get(self._k(key)))

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        await self.guarded(self.client.set(self._k(key), value, px=_ms(ttl)))

    async def set_if_absent(self, key: str, value: bytes, ttl: float | None = None) -> bool:
        return bool(await self.guarded(self.client.set(self._k(key), value, px=_ms(ttl), nx=True)))

    async def delete(self, key: str) -> None:
        await self.guarded(self.client.delete(self._k(key)))

    async def take(self, key: str) -> bytes | None:
        return await self.guarded(self.client.getdel(self._k(key)))

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> tuple[int, float | None]:
        value, pttl = await self.guarded(self._incr(keys=[self._k(key)], args=[amount, _ms(ttl) or 0]))
        return int(value), (None if int(pttl) < 0 else int(pttl) / 1000)

    async def push(self, queue: str, value: bytes) -> None:
        await self.guarded(self.client.rpush(self._k(queue), value))

    async def pop(self, queue: str, timeout: float = 0) -> bytes | None:
        item = await self.guarded(self.client.lpop(self._k(queue)))
        deadline = time.monotonic() + timeout
        # Block in slices of half the socket timeout: Redis may answer a BLPOP up to ~100 ms after its
        # timeout (it checks at 10 Hz), and the slice must never trip the socket timeout. The slice is
        # at least 10 ms, because BLPOP rounds to milliseconds and a 0 ms timeout blocks for ever.
        while item is None and (left := deadline - time.monotonic()) > 0:
            wait = max(0.01, min(left, self.timeout / 2))
            popped = await self.guarded(self.client.blpop([self._k(queue)], timeout=wait))
            item = None if popped is None else popped[1]
        return item

    async def push_many(self, queue: str, values: list[bytes]) -> None:
        """Append several items in one round trip, in order."""
        await self.guarded(self.client.rpush(self._k(queue), *values))

    async def head(self, queue: str, count: int) -> list[bytes]:
        """The first ``count`` items of a list, left in place (see ``trim_if_owner``)."""
        return list(await self.guarded(self.client.lrange(self._k(queue), 0, count - 1)))

    async def trim_if_owner(self, queue: str, count: int, lock: str, token: bytes) -> bool:
        """Drop the first ``count`` items and release ``lock``, only while ``token`` holds the lock."""
        keys = [self._k(queue), self._k(lock)]
        return bool(await self.guarded(self._trim(keys=keys, args=[count, token])))

    async def ping(self) -> bool:
        return bool(await self.guarded(self.client.ping()))

    async def close(self) -> None:
        await self.client.aclose()


def _ms(ttl: float | None) -> int | None:
    return None if ttl is None else max(1, math.ceil(ttl * 1000))
