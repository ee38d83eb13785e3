"""Per-key fixed-window rate limits: one atomic ``KV.incr`` per request.

The counter lives in the KV (Redis when configured), so every process and host shares it and the
count is exact under any concurrency: INCR returns the caller's own position in the window, with no
read-then-write race. Windows are aligned to the service clock (``floor(now / window)``), so all
processes agree on boundaries within their clock skew and tests move a ManualClock instead of
sleeping. The KV entry is named by the window index, so it is right whatever the KV's own clock.

When the shared KV fails, paying traffic keeps flowing (reliability-security.md 4.1, "fail open,
degraded"): the request is counted in a per-process fallback instead, so the limit still holds per
process, and the response says ``X-RateLimit-Degraded: 1``. After ``BREAKER_FAILURES`` failures in a
row the shared KV is skipped for ``BREAKER_SECONDS``, so an outage costs no timeout per request.
"""

from __future__ import annotations

import logging
import math
from typing import NamedTuple

from agent_server.clock import Clock
from agent_server.errors import RateLimited
from agent_server.storage.kv import KV, MemoryKV

log = logging.getLogger("agentgate.ratelimit")
BREAKER_FAILURES = 3
BREAKER_SECONDS = 5.0


class RateState(NamedTuple):  # a tuple, not a frozen dataclass: built on every request, so cheap
    limit: int
    remaining: int
    reset: int  # Unix time the window ends
    degraded: bool = False

    def headers(self) -> dict[str, str]:
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if self.degraded:
            headers["X-RateLimit-Degraded"] = "1"
        return headers


class RateLimiter:
    def __init__(self, kv: KV, clock: Clock, window: float) -> None:
        self._kv, self._clock, self.window = kv, clock, window
        self._fallback = MemoryKV(clock)
        self._failures = 0
        self._skip_until = 0.0

    async def hit(self, subject: str, limit: int) -> RateState:
        """Count one request of ``subject``; raises RateLimited (with headers) past ``limit``."""
        now = self._clock.now()
        index = int(now // self.window)
        window_end = (index + 1) * self.window
        name = f"rl:{subject}:{index}"
        ttl = window_end - now + 1.0  # the TTL only cleans up: an entry outlives its window by 1 s
        kv, degraded = self._kv, now < self._skip_until
        if degraded:
            kv = self._fallback
        try:
            count, _ = await kv.incr(name, ttl=ttl)
        except Exception as exc:  # the shared store's own errors (connection, timeout, ...)
            if degraded:
                raise  # the in-process fallback itself failed: a bug, not an outage
            self._trip(now, exc)
            kv, degraded = self._fallback, True
            count, _ = await kv.incr(name, ttl=ttl)
        else:
            if not degraded:
                self._failures = 0
        if count == 1:
            # First hit of a new window: drop the previous window's counter now, so an in-memory
            # KV (which expires lazily, on access) holds one counter per key, not one per minute.
            await self._forget(kv, f"rl:{subject}:{index - 1}")
        state = RateState(limit, max(0, limit - count), math.ceil(window_end), degraded)
        if count > limit:
            retry_after = max(1, math.ceil(window_end - now))
            raise RateLimited(
                f"Rate limit of {limit} requests per {self.window:g} s reached for this API key; "
                f"retry after {retry_after} s.",
                retry_after=retry_after,
                headers=state.headers(),
            )
        return state

    def _trip(self, now: float, exc: Exception) -> None:
        self._failures += 1
        if self._failures >= BREAKER_FAILURES:
            self._failures = 0
            self._skip_until = now + BREAKER_SECONDS
            log.warning(
                "rate-limit store failing (%s); counting per process for %.0f s",
                type(exc).__name__,
                BREAKER_SECONDS,
            )

    @staticmethod
    async def _forget(kv: KV, name: str) -> None:
        try:
            await kv.delete(name)
        except Exception:  # housekeeping only; the entry's TTL removes it anyway
            log.debug("could not delete %s", name)
