"""One process of the cross-process limiter test: fires a burst at one key on a shared Redis.

    python -m tests.security.limiter_process <redis_url> <prefix> <key id> <requests> <start_at>

Waits until the wall-clock time ``start_at`` (so the processes' bursts overlap), sends
``requests`` concurrent hits on a 60-per-minute limit and prints how many passed.
"""

from __future__ import annotations

import asyncio
import sys
import time

from agent_server.foundation.clock import SystemClock
from agent_server.foundation.errors import RateLimited
from agent_server.gateway.ratelimit import RateLimiter
from agent_server.storage.kv import RedisKV


async def burst(url: str, prefix: str, key_id: str, requests: int, start_at: float) -> int:
    kv = RedisKV(url, prefix=prefix, timeout=2.0)
    limiter = RateLimiter(kv, SystemClock(), 60.0)

    async def one() -> bool:
        try:
            await limiter.hit(key_id, 60)
        except RateLimited:
            return False
        return True

    try:
        await kv.ping()  # connect before the start, so the burst is only the hits
        await asyncio.sleep(max(0.0, start_at - time.time()))
        return sum(await asyncio.gather(*(one() for _ in range(requests))))
    finally:
        await kv.close()


if __name__ == "__main__":
    url, prefix, key_id, requests, start_at = sys.argv[1:6]
    print(asyncio.run(burst(url, prefix, key_id, int(requests), float(start_at))))
