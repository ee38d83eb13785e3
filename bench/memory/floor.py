"""What the chosen stack holds before any of agentgate's code: the floor under a worker's memory.

    .venv/bin/python bench/memory/floor.py

Prints, one step after the other in one fresh interpreter, the resident memory (RSS, MB) of:
FastAPI, SQLModel and httpx imported; uvicorn's event loop and HTTP parser imported; a one-route app
with one SQLModel table served by uvicorn for a second: the floor of any worker on this stack, to
read beside a worker's RSS (bench/gateway/run.sh). Not a test; the figures are in docs/performance.md.
"""

from __future__ import annotations

import gc
import sys
import threading
import time

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # as agent_server/__init__.py does


def rss() -> float:
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 1048576


def step(name: str, before: float) -> float:
    now = rss()
    print(f"{name:58s} {now:6.1f} MB  (+{now - before:.1f})")
    return now


def main() -> None:
    level = step("bare interpreter", 0.0)
    import fastapi
    import httpx
    import sqlmodel
    import uvicorn
    import uvicorn.loops.uvloop  # what `agentgate serve` runs on
    import uvicorn.protocols.http.httptools_impl

    level = step("FastAPI, SQLModel, httpx, uvicorn imported", level)

    class Key(sqlmodel.SQLModel, table=True):
        id: int | None = sqlmodel.Field(default=None, primary_key=True)
        digest: str

    app = fastapi.FastAPI()
    client = httpx.AsyncClient()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "client": type(client).__name__}

    server = uvicorn.Server(uvicorn.Config(app, port=18299, log_level="warning", loop="uvloop"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    time.sleep(1.0)
    level = step("a one-route app with one table, served", level)
    server.should_exit = True

    step("after the server stopped", level)


if __name__ == "__main__":
    main()
