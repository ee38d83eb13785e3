"""Micro-benchmark of the whole app without an HTTP server: POST /v1/chat/completions called as ASGI.

    .venv/bin/python bench/gateway/app_micro.py [base_url] [seconds] [concurrency ...]

Production mode, a live key of an enterprise tenant (no rate limit in the way), one upstream (default:
the bench-kit mock on 127.0.0.1:18000, ``gpt-4o-mini`` -> ``mock-gpt``), a fresh temp data dir. For
each of non-streaming and streaming and each concurrency it prints requests/s and the CPU
microseconds per request of this process: what the app and the LLM layer cost, without uvicorn's
HTTP parsing and socket writes. CPU per request is the comparable figure on a shared machine. Not a test.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import uvloop
from fastapi import FastAPI

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway import provision
from agent_server.storage.migrate import upgrade
from http_facade.app import create_app

PATH = b"/v1/chat/completions"


async def call(app: FastAPI, body: bytes, key: str) -> None:
    """One request through the app; raises on anything but a 200."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH.decode(),
        "raw_path": PATH,
        "query_string": b"",
        "root_path": "",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5555),
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer " + key.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "state": {},
    }
    done = asyncio.Event()
    sent, status, parts = False, 0, []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the client stays until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    await app(scope, receive, send)
    done.set()
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {b''.join(parts)[:300]!r}")


async def run(base_url: str, seconds: float, concurrencies: list[int]) -> None:
    settings = Settings(
        mode="production",
        data_dir=Path(tempfile.mkdtemp(prefix="app-micro-")),
        redis_url=None,
        database_url=None,
        upstreams=[UpstreamConfig(name="bench", base_url=base_url, models={"gpt-4o-mini": "mock-gpt"})],
        billing_allow_sandbox_in_production=True,  # nothing is sold in a benchmark
    )
    upgrade(settings)  # the operator commands never create an empty database
    tenant = await provision.create_tenant(settings, f"bench-{uuid.uuid4().hex[:6]}", "enterprise", 10**9)
    key = (await provision.create_key(settings, tenant.id, "bench", ["chat"]))[1]
    app = create_app(settings)
    message = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Say hello"}],
        "max_tokens": 16,
    }
    async with app.router.lifespan_context(app):
        for label, stream in (("nonstream", False), ("stream", True)):
            body = json.dumps({**message, "stream": stream}).encode()
            for concurrency in concurrencies:
                for _ in range(300):  # warm the pool and the caches
                    await call(app, body, key)
                done, deadline = 0, time.monotonic() + seconds

                async def worker(body: bytes = body, deadline: float = deadline) -> None:
                    nonlocal done
                    while time.monotonic() < deadline:
                        await call(app, body, key)
                        done += 1

                cpu, wall = time.process_time(), time.monotonic()
                await asyncio.gather(*(worker() for _ in range(concurrency)))
                cpu, wall = time.process_time() - cpu, time.monotonic() - wall
                print(
                    f"{label:9} c={concurrency:<3} {done / wall:7.0f} req/s  {cpu / done * 1e6:6.1f} us CPU/req"
                )


if __name__ == "__main__":
    args = sys.argv[1:]
    uvloop.run(
        run(
            args[0] if args else "http://127.0.0.1:18000/v1",
            float(args[1]) if len(args) > 1 else 5.0,
            [int(value) for value in args[2:]] or [1, 16],
        )
    )
