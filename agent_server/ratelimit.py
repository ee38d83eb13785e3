"""Fixed-window limits over ``KV.incr``: exact under concurrency (one atomic increment per hit).

A window is aligned to the clock (``floor(now / window)``), so every process sharing the KV agrees on
it and the key of the next window is a fresh key. The first ``limit`` hits of a window pass, every
later hit is refused until the window ends; a refused hit still counts, so hammering does not help.

Headers follow the public-site spec (section 8): ``RateLimit-Limit: <n>;w=<s>`` (draft -01..-07
form), ``RateLimit-Remaining``, ``RateLimit-Reset`` (seconds), ``RateLimit-Policy`` in the current
structured-field form (``"<name>";q=<n>;w=<s>``) and ``Retry-After`` on 429.

When the shared store (Redis) fails, a policy decides (docs/operations.md): ``fail_open`` policies
count in a per-process fallback (the limit then holds per process) and answer with
``X-RateLimit-Degraded: 1``, as the gateway's per-key limits do; the others (the chat proxy and
the site's model budget, which spend model tokens for anonymous callers) refuse with 503 and
``Retry-After: 5``. RedisKV's breaker makes either answer immediate during an outage.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from agent_server.clock import Clock
from agent_server.errors import RateLimited, Unavailable
from agent_server.storage.kv import KV, KVUnavailable, MemoryKV

log = logging.getLogger("agentgate.ratelimit")


@dataclass(frozen=True)
class Policy:
    """``limit`` hits (or units, e.g. tokens) per ``window`` seconds for each subject."""

    name: str
    limit: int
    window: int
    fail_open: bool = False  # store down: count per process (degraded) instead of refusing with 503


@dataclass(frozen=True)
class Usage:
    policy: Policy
    used: int
    reset: int  # seconds until the window ends
    degraded: bool = False  # counted per process: the shared store failed

    @property
    def allowed(self) -> bool:
        return self.used <= self.policy.limit

    @property
    def remaining(self) -> int:
        return max(0, self.policy.limit - self.used)

    def headers(self) -> dict[str, str]:
        p = self.policy
        headers = {
            "RateLimit-Limit": f"{p.limit};w={p.window}",
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
            "RateLimit-Policy": f'"{p.name}";q={p.limit};w={p.window}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.reset)
        if self.degraded:
            headers["X-RateLimit-Degraded"] = "1"
        return headers


class Limiter:
    """Counts hits per (policy, subject) in clock-aligned fixed windows."""

    def __init__(self, kv: KV, clock: Clock, prefix: str = "rl") -> None:
        self.kv, self.clock, self.prefix = kv, clock, prefix
        self._fallback = MemoryKV(clock)  # per-process counts while the shared store is down

    def _window(self, policy: Policy) -> tuple[str, int]:
        now = self.clock.now()
        index = math.floor(now / policy.window)
        reset = max(1, math.ceil((index + 1) * policy.window - now))
        return f"{self.prefix}:{policy.name}:{index}", reset

    async def hit(self, policy: Policy, subject: str, cost: int = 1) -> Usage:
        """Count ``cost`` units now; the result says whether this hit fits in the window."""
        window, reset = self._window(policy)
        key = f"{window}:{subject}"
        try:
            # The TTL only cleans up: the window index in the key decides which window counts.
            used, _ = await self.kv.incr(key, cost, ttl=policy.window + 1)
        except Exception as exc:
            if not policy.fail_open:
                raise self._store_down(exc) from None
            used, _ = await self._fallback.incr(key, cost, ttl=policy.window + 1)
            return Usage(policy, used, reset, degraded=True)
        return Usage(policy, used, reset)

    async def peek(self, policy: Policy, subject: str) -> Usage:
        """The current count without adding to it."""
        window, reset = self._window(policy)
        try:
            raw = await self.kv.get(f"{window}:{subject}")
        except Exception as exc:
            if not policy.fail_open:
                raise self._store_down(exc) from None
            raw = await self._fallback.get(f"{window}:{subject}")
            return Usage(policy, int(raw or 0), reset, degraded=True)
        return Usage(policy, int(raw or 0), reset)

    @staticmethod
    def _store_down(exc: Exception) -> Unavailable:
        # Fail closed: anonymous model spend is not admitted when its limits cannot be counted.
        # RedisKV logs an outage once when its breaker opens; one line per request would flood.
        level = logging.DEBUG if isinstance(exc, KVUnavailable) else logging.WARNING
        log.log(level, "rate-limit store unavailable: %s", type(exc).__name__)
        return Unavailable("The rate-limit store is unavailable; please retry shortly.", retry_after=5)

    async def enforce(self, policy: Policy, subject: str, **extra: Any) -> Usage:
        """Count a hit and raise 429 (with headers and ``extra`` in the envelope) when over the limit."""
        usage = await self.hit(policy, subject)
        if not usage.allowed:
            raise RateLimited(
                f"Rate limit of {policy.limit} requests per {policy.window} s exceeded; "
                f"retry in {usage.reset} s.",
                retry_after=usage.reset,
                headers=usage.headers(),
                extra=extra,
            )
        return usage
