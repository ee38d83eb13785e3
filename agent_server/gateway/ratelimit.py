"""Per-key plan limits on /v1: the service's one limiter (``agent_server/policies/ratelimit.py``, GCRA) with
the gateway's ``X-RateLimit-*`` headers.

A key of ``limit`` requests per window gets at most ``limit`` at once and then one more every
``window / limit`` seconds: 200 concurrent requests on a 60/min key pass 60, and a burst just
before a minute boundary plus one just after pass 60 plus what the refill allowed in between,
never 120 (the fixed window this replaced let both through). The count lives in Redis when
configured (one Lua script per request, exact across processes), else in this process.

When Redis fails, paying traffic keeps flowing (reliability-security.md 4.1, "fail open,
degraded"): the request is counted per process instead, so the limit still holds per process, and
the response says ``X-RateLimit-Degraded: 1``. RedisKV's breaker skips a failing Redis for a few
seconds, so an outage costs no timeout per request.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import RateLimited
from agent_server.policies.ratelimit import Limiter
from agent_server.policies.retry_guidance import GATEWAY_RESET, after_rate_limit
from agent_server.storage.kv import KV

KEY_PREFIX = "rl:key:"  # + the key id


class RateState(NamedTuple):  # a tuple, not a frozen dataclass: built on every request, so cheap
    limit: int
    remaining: int
    reset: int  # Unix time the key's whole allowance is back
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
        self._limiter, self._clock, self.window = Limiter(kv, clock), clock, window

    async def hit(self, subject: str, limit: int) -> RateState:
        """Count one request of ``subject``; raises RateLimited (with headers) past ``limit``."""
        decision = await self._limiter.acquire(KEY_PREFIX + subject, limit, self.window, fail_open=True)
        now = self._clock.now()
        state = RateState(limit, decision.remaining, math.ceil(now + decision.reset_after), decision.degraded)
        if not decision.allowed:
            retry_after = max(1, math.ceil(decision.retry_after))
            raise RateLimited(
                f"Rate limit of {limit} requests per {self.window:g} s reached for this API key; "
                f"{after_rate_limit(retry_after, GATEWAY_RESET)}.",
                retry_after=retry_after,
                headers=state.headers(),
            )
        return state
