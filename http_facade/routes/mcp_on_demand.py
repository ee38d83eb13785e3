"""``/api/mcp.php`` built at its first request: the MCP SDK, its server and transports cost a worker
~18 MB of memory and most workers never serve MCP (docs/performance.md, "Memory").

``MCPOnDemand`` is the ASGI app of the endpoint's exact routes. The app's lifespan enters
``running()``; the first request asks its task to build the endpoint (``routes/mcp.py``:
``build_endpoint``) and to run what the endpoint needs running (the SDK's session managers, the event
channel, the content watch) until the app stops. The task owns those contexts, so they are entered
and left in one task, as anyio asks; requests wait for it once, then go straight to the endpoint.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("agentgate.mcp")
# The endpoint and what must run beside it, each with ``run()`` (an async context manager).
Built = tuple[ASGIApp, list[Any]]


class MCPRoute(Route):
    """The endpoint's exact route, recording itself in ``scope["route"]`` as FastAPI's routes do: the
    edge's metrics then name the request's series without matching it against every route again."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match is not Match.NONE:
            child_scope["route"] = self
        return match, child_scope


class MCPOnDemand:
    def __init__(self, build: Callable[[], Built]) -> None:
        self._build = build
        self._endpoint: ASGIApp | None = None
        self._failure: BaseException | None = None
        self._wanted: anyio.Event | None = None  # events belong to the running loop: made in running()
        self._ready: anyio.Event | None = None
        self._stop: anyio.Event | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self._wanted, self._ready, self._stop = anyio.Event(), anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(self._serve, self._wanted, self._ready, self._stop)
            try:
                yield
            finally:
                self._stop.set()
                self._wanted.set()
        self._endpoint = self._failure = None

    async def _serve(self, wanted: anyio.Event, ready: anyio.Event, stop: anyio.Event) -> None:
        await wanted.wait()
        if stop.is_set():
            return
        async with AsyncExitStack() as stack:
            try:
                endpoint, runners = self._build()
                for runner in runners:
                    await stack.enter_async_context(runner.run())
            except Exception as exc:  # each request then fails with it (a 500), the app keeps serving
                log.exception("the MCP endpoint could not start")
                self._failure = exc
            else:
                self._endpoint = endpoint
                gc.freeze()  # built once for the app's lifetime, like the start's heap (http_facade/app.py)
            ready.set()
            await stop.wait()

    @property
    def built(self) -> ASGIApp | None:
        """The endpoint once a request (or ``started``) has built it."""
        return self._endpoint

    async def started(self) -> ASGIApp:
        """The endpoint, built and running now unless it already is."""
        if self._endpoint is not None:
            return self._endpoint
        if self._wanted is None or self._ready is None:
            raise RuntimeError("the MCP endpoint serves only while the app's lifespan runs")
        self._wanted.set()
        await self._ready.wait()
        if self._endpoint is None:
            raise RuntimeError("the MCP endpoint could not start") from self._failure
        return self._endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoint or await self.started()
        await endpoint(scope, receive, send)
