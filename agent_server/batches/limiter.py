"""The batch limiter: a batch never takes more than ``share`` percent of its key's live rate limit.

Each line takes one unit from two allowances, in this order:

1. the batch allowance of the key: ``share`` percent of its rate limit per window (GCRA, like the
   live limit, in the KV: shared by every worker process with Redis);
2. the live allowance of the key itself, the one its live requests count against.

So batches and live calls together stay within the key's limit, batches alone within their share,
and when live traffic has used the rest of the window a batch line waits for it instead of taking a
live request's place. A line that does not fit waits (``retry_after``), it is never refused.
"""

from __future__ import annotations

import asyncio

from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.ratelimit import KEY_PREFIX
from agent_server.ratelimit import Limiter

BATCH_PREFIX = "rl:batch:"  # + the key id
MIN_WAIT = 0.05  # seconds: a retry sooner than this would only spin


class BatchLimiter:
    def __init__(self, limiter: Limiter, window: float, share_percent: int) -> None:
        self.limiter, self.window, self.share = limiter, window, share_percent

    def batch_limit(self, principal: KeyPrincipal) -> int:
        return max(1, principal.rate_limit * self.share // 100)

    async def take(self, principal: KeyPrincipal) -> None:
        """Wait until one more line of this key's batches may run now."""
        await self._take(BATCH_PREFIX + principal.key_id, self.batch_limit(principal))
        await self._take(KEY_PREFIX + principal.key_id, principal.rate_limit)

    async def _take(self, key: str, limit: int) -> None:
        while True:
            decision = await self.limiter.acquire(key, limit, self.window, fail_open=True)
            if decision.allowed:
                return
            await asyncio.sleep(max(MIN_WAIT, decision.retry_after))
