"""The one rate limiter of the service (API keys, the public site, sign-ins): GCRA, exact across
processes.

GCRA (the generic cell rate algorithm) keeps one number per subject, the theoretical arrival time
(TAT): when the subject's allowance is full again. A limit of ``limit`` per ``window`` seconds
spends an interval ``T = window / limit`` per unit; a request of ``cost`` units passes when
``max(TAT, now) + cost * T - now <= limit * T``, and then moves TAT there. So a burst gets at
most ``limit`` units at once and then one more every ``T``: never the ``2 * limit`` that a fixed
window lets through across its boundary. Refused requests do not move TAT, so a client that
keeps retrying gets the next unit as soon as it is due, and no later.

Times are integer microseconds of the service clock (exact in the doubles of Redis's Lua, and
ManualClock moves them in tests). With Redis the read-modify-write is one Lua script, atomic
across every process and host (hosts agree on time through NTP: a skew of ``d`` seconds shifts at
most ``d / T`` units). Without Redis the same arithmetic runs on a table in the process, shared
by every limiter over the same in-process KV.

When the shared store fails, the policy decides (docs/operations.md): ``fail_open`` policies count
in a per-process table (the limit then holds per process) and say so (``degraded``); the others
(the chat proxy and the site's model budget, which spend model tokens for anonymous callers)
refuse with 503 and ``Retry-After: 5``. RedisKV's breaker makes either answer immediate.

The one rule of every rate-limit header (docs/public-api.md, docs/gateway.md): the reset is when
the whole allowance is back (``Remaining`` equals the limit again: the bucket is full), and
``Retry-After`` is the seconds until the next request passes, so it is never more than the reset.
Headers of the public site (spec 8): ``RateLimit-Limit: <n>;w=<s>``, ``RateLimit-Remaining``,
``RateLimit-Reset`` (seconds), ``RateLimit-Policy`` (``"<name>";q=<n>;w=<s>``) and ``Retry-After``
on 429; the gateway's ``X-RateLimit-*`` (agent_server/gateway/ratelimit.py) give the reset as a
Unix time.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import RateLimited, Unavailable
from agent_server.policies.retry_guidance import SITE_RESET, after_rate_limit
from agent_server.storage.kv import KV, KVUnavailable, RedisKV

log = logging.getLogger("agentgate.ratelimit")
MICROS = 1_000_000
SWEEP_SECONDS = 10.0  # how often an in-process table drops subjects whose allowance is full again

# KEYS[1]: the subject's TAT. ARGV: now, interval, capacity (limit * interval), cost, force; all
# integer microseconds except cost. Returns {passes, TAT after the call - now}. A refused request
# (and a peek, cost 0) writes nothing; ``force`` counts even past the limit (tokens already spent).
GCRA_SCRIPT = """
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local next_tat = tat + cost * interval
local passes = next_tat - now <= capacity
if cost > 0 and (passes or ARGV[5] == '1') then
  redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX', math.floor((next_tat - now) / 1000) + 1)
  tat = next_tat
end
return {passes and 1 or 0, tat - now}
"""


class Decision(NamedTuple):  # a tuple: one is built per request on the gateway's hot path
    allowed: bool
    remaining: int  # units that would still pass right now
    reset_after: float  # seconds until the whole allowance is back
    retry_after: float  # seconds until this request would pass (0 when it did); a peek's: one unit
    degraded: bool  # counted per process: the shared store failed


def _decide(passes: int, ahead: int, interval: int, limit: int, cost: int, degraded: bool) -> Decision:
    capacity = limit * interval
    remaining = max(0, min(limit, (capacity - ahead) // interval))
    # Refused, or a peek (cost 0): the time until ``cost`` units (a peek: one) fit.
    wait = 0 if passes and cost else max(0, ahead + max(cost, 1) * interval - capacity)
    return Decision(bool(passes), remaining, ahead / MICROS, wait / MICROS, degraded)


class MemoryTable:
    """TATs of one process. Single event loop, so each update is atomic without locks."""

    def __init__(self) -> None:
        self.tats: dict[str, int] = {}
        self._next_sweep = 0

    def update(
        self, key: str, now: int, interval: int, capacity: int, cost: int, force: bool
    ) -> tuple[int, int]:
        if now >= self._next_sweep:  # amortised: subjects seen once must not stay for ever
            self._next_sweep = now + int(SWEEP_SECONDS * MICROS)
            self.tats = {k: tat for k, tat in self.tats.items() if tat > now}
        tat = self.tats.get(key, now)
        if tat < now:
            tat = now
        next_tat = tat + cost * interval
        passes = next_tat - now <= capacity
        if cost and (passes or force):
            self.tats[key] = tat = next_tat
        return passes, tat - now


# One table per in-process KV: limiters built over the same KV share their subjects, as they
# would share them in Redis.
_TABLES: WeakKeyDictionary[Any, MemoryTable] = WeakKeyDictionary()


def _table_of(kv: KV) -> MemoryTable:
    table = _TABLES.get(kv)
    if table is None:
        table = _TABLES[kv] = MemoryTable()
    return table


@dataclass(frozen=True)
class Policy:
    """``limit`` requests (or units, e.g. tokens) per ``window`` seconds for each subject."""

    name: str
    limit: int
    window: int
    fail_open: bool = False  # store down: count per process (degraded) instead of refusing with 503


@dataclass(frozen=True)
class Usage:
    """A policy's decision for one subject, with the public site's headers."""

    policy: Policy
    decision: Decision

    @property
    def allowed(self) -> bool:
        return self.decision.allowed

    @property
    def remaining(self) -> int:
        return self.decision.remaining

    @property
    def reset(self) -> int:
        """Whole seconds until the whole allowance is back."""
        return math.ceil(self.decision.reset_after)

    @property
    def retry_after(self) -> int:
        """Whole seconds until a refused request would pass (at least 1)."""
        return max(1, math.ceil(self.decision.retry_after))

    def headers(self) -> dict[str, str]:
        p = self.policy
        headers = {
            "RateLimit-Limit": f"{p.limit};w={p.window}",
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
            "RateLimit-Policy": f'"{p.name}";q={p.limit};w={p.window}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after)
        if self.decision.degraded:
            headers["X-RateLimit-Degraded"] = "1"
        return headers


class Limiter:
    """GCRA per (policy, subject) on the shared KV: Redis when configured, else this process."""

    def __init__(self, kv: KV, clock: Clock, prefix: str = "rl") -> None:
        self.clock, self.prefix = clock, prefix
        self._redis = kv if isinstance(kv, RedisKV) else None
        self._script = self._redis.client.register_script(GCRA_SCRIPT) if self._redis else None
        self._table = None if self._redis else _table_of(kv)
        self._fallback = MemoryTable()  # per-process counts while the shared store is down

    async def acquire(
        self,
        key: str,
        limit: int,
        window: float,
        cost: int = 1,
        *,
        fail_open: bool = False,
        force: bool = False,
    ) -> Decision:
        """Take ``cost`` units of ``key``'s allowance of ``limit`` per ``window`` seconds, if they fit
        (or anyway, with ``force``); ``cost=0`` only looks. Raises Unavailable (503) when the
        shared store is down and the policy is not ``fail_open``."""
        now = int(self.clock.now() * MICROS)
        interval = max(1, int(window * MICROS) // max(1, limit))
        capacity = limit * interval
        if self._table is not None:
            passes, ahead = self._table.update(key, now, interval, capacity, cost, force)
            return _decide(passes, ahead, interval, limit, cost, False)
        try:
            passes, ahead = await self._redis.guarded(  # type: ignore[union-attr]
                self._script(  # type: ignore[misc]
                    keys=[self._redis.prefix + key],  # type: ignore[union-attr]
                    args=[now, interval, capacity, cost, int(force)],
                )
            )
        except Exception as exc:  # the store's own errors: connection, timeout, breaker open
            if not fail_open:
                raise self._store_down(exc) from None
            passes, ahead = self._fallback.update(key, now, interval, capacity, cost, force)
            return _decide(passes, ahead, interval, limit, cost, True)
        return _decide(int(passes), int(ahead), interval, limit, cost, False)

    async def hit(self, policy: Policy, subject: str, cost: int = 1) -> Usage:
        """Take ``cost`` units now if they fit; the result says whether they did."""
        return Usage(policy, await self._policy(policy, subject, cost))

    async def spend(self, policy: Policy, subject: str, cost: int) -> Usage:
        """Count ``cost`` units even past the limit: what was already consumed (model tokens)."""
        return Usage(policy, await self._policy(policy, subject, cost, force=True))

    async def peek(self, policy: Policy, subject: str) -> Usage:
        """The subject's allowance now, without taking any of it."""
        return Usage(policy, await self._policy(policy, subject, 0))

    async def enforce(self, policy: Policy, subject: str, **extra: Any) -> Usage:
        """Take one unit, or raise 429 (with headers and ``extra`` in the envelope)."""
        usage = await self.hit(policy, subject)
        if not usage.allowed:
            raise RateLimited(
                f"Rate limit of {policy.limit} requests per {policy.window} s exceeded; "
                f"{after_rate_limit(usage.retry_after, SITE_RESET, idempotent=True)}.",
                retry_after=usage.retry_after,
                headers=usage.headers(),
                extra=extra,
            )
        return usage

    async def _policy(self, policy: Policy, subject: str, cost: int, force: bool = False) -> Decision:
        key = f"{self.prefix}:{policy.name}:{subject}"
        return await self.acquire(
            key, policy.limit, policy.window, cost, fail_open=policy.fail_open, force=force
        )

    @staticmethod
    def _store_down(exc: Exception) -> Unavailable:
        # RedisKV logs an outage once when its breaker opens; one line per request would flood.
        level = logging.DEBUG if isinstance(exc, KVUnavailable) else logging.WARNING
        log.log(level, "rate-limit store unavailable: %s", type(exc).__name__)
        return Unavailable("The rate-limit store is unavailable; please retry shortly.", retry_after=5)
