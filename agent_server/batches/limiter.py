"""The batch limiter: a batch never takes more than ``share`` percent of its key's live rate limit.

Each line takes one unit from two allowances, in this order:

1. the batch allowance of the key: ``share`` percent of its rate limit per window (GCRA, like the
   live limit, in the KV: shared by every worker process with Redis);
2. the live allowance of the key itself, the one its live requests count against.

So batches and live calls together stay within the key's limit, batches alone within their share,
and when live traffic has used the rest of the window a batch line waits for it instead of taking a
live request's place. A line that does not fit waits (``retry_after``), it is never refused.

Units are taken ``BULK`` at a time while they fit (one round trip to the KV for many lines), then
one at a time; a slice's unused units are lost, so a batch may take slightly less, never more.
"""

from __future__ import annotations

import asyncio

from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.ratelimit import KEY_PREFIX
from agent_server.policies.ratelimit import Limiter

BATCH_PREFIX = "rl:batch:"  # + the key id
BULK = 16
MIN_WAIT = 0.05  # seconds: a retry sooner than this would only spin


class BatchLimiter:
    def __init__(self, limiter: Limiter, window: float, share_percent: int) -> None:
        self.limiter, self.window, self.share = limiter, window, share_percent

    def batch_limit(self, principal: KeyPrincipal) -> int:
        return max(1, principal.rate_limit * self.share // 100)

    def permits(self, principal: KeyPrincipal) -> Permits:
        """The units one slice of one batch takes, line by line."""
        return Permits(self, principal)


class Permits:
    def __init__(self, limiter: BatchLimiter, principal: KeyPrincipal) -> None:
        self.limiter, self.principal, self.banked = limiter, principal, 0

    async def take(self) -> None:
        """Wait until one more line may run now."""
        if self.banked:
            self.banked -= 1
            return
        cost = BULK
        while True:
            if await self._fits(cost):
                self.banked = cost - 1
                return
            cost = 1

    async def _fits(self, cost: int) -> bool:
        """``cost`` units of both allowances; when one refuses, wait for one unit and say no."""
        principal, window = self.principal, self.limiter.window
        for key, limit in (
            (BATCH_PREFIX + principal.key_id, self.limiter.batch_limit(principal)),
            (KEY_PREFIX + principal.key_id, principal.rate_limit),
        ):
            decision = await self.limiter.limiter.acquire(key, limit, window, cost, fail_open=True)
            if not decision.allowed:
                if cost == 1:
                    await asyncio.sleep(max(MIN_WAIT, decision.retry_after))
                return False
        return True
