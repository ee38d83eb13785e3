"""Micro-benchmark of the LLM layer alone (router + OpenAI-compatible backend), no HTTP server.

    .venv/bin/python bench/gateway/backend_micro.py [base_url] [upstream_model] [seconds] [concurrency] [pooled|httpx]

Runs complete() and stream() in a closed loop against an OpenAI-compatible upstream (default: the
bench-kit mock on 127.0.0.1:18000) and prints requests/s and CPU microseconds per request of this
process, i.e. what our layer costs on top of the upstream. Not a test.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Awaitable, Callable

from pydantic import SecretStr

from agent_server.foundation.clock import SystemClock
from agent_server.foundation.settings_llm import RouteEntry, UpstreamConfig
from agent_server.llm.openai_compat import OpenAICompatBackend
from agent_server.llm.router import Router
from agent_server.llm.types import ChatRequest


async def run(base_url: str, upstream_model: str, seconds: float, concurrency: int, kind: str) -> None:
    config = UpstreamConfig(
        name="bench", base_url=base_url, api_key=SecretStr("sk-bench"), models={"m": upstream_model}
    )
    backend = OpenAICompatBackend(config, transport_kind="httpx" if kind == "httpx" else "pooled")
    router = Router(
        {"bench": backend},
        None,
        lambda: {"m": [RouteEntry(backend="bench")]},
        SystemClock(),
        rng=random.Random(1),
    )
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "Say hello"}], max_tokens=16)
    streaming = request.model_copy(update={"stream": True})

    async def plain() -> None:
        await router.complete(request)

    async def stream() -> None:
        async for _ in router.stream(streaming):
            pass

    for label, call in (("complete", plain), ("stream", stream)):
        for _ in range(200):  # warm the pool
            await call()
        done = 0
        deadline = time.monotonic() + seconds

        async def worker(call: Callable[[], Awaitable[None]] = call, deadline: float = deadline) -> None:
            nonlocal done
            while time.monotonic() < deadline:
                await call()
                done += 1

        cpu, wall = time.process_time(), time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        print(
            f"{kind:6} {label:8} c={concurrency}: {done / wall:8.0f} req/s  {cpu / done * 1e6:6.0f} us CPU/req"
        )
    await router.aclose()


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(
        run(
            args[0] if args else "http://127.0.0.1:18000/v1",
            args[1] if len(args) > 1 else "mock-gpt",
            float(args[2]) if len(args) > 2 else 5.0,
            int(args[3]) if len(args) > 3 else 1,
            args[4] if len(args) > 4 else "pooled",
        )
    )
