"""The router: ``services.llm``. Picks the backends of the model's route and falls back in order.

It satisfies both seams itself (``LLMBackend`` and ``RelayBackend``, llm/types.py), with the same
fallback rules on each. The table lives in the database; every process re-reads the
revision at most once per ``check_seconds`` (one tiny query) and reloads the rows when it changed,
so an edit takes effect everywhere without a restart.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from contextvars import ContextVar
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import ModelNotFound, TimedOut, Unavailable, UpstreamFailed
from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import MOCK_BACKEND, RouteEntry
from agent_server.llm.anthropic_native import upstream_class
from agent_server.llm.messages_bridge import relay_for
from agent_server.llm.mock import MockBackend
from agent_server.llm.routing import RoutingTable, seed_routes
from agent_server.llm.store import ensure_seeded, read_revision, read_table
from agent_server.llm.types import Answer, Call, ChatRequest, Chunk, Completion, Delta, LLMBackend
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.llm")

# Errors after which the next backend of the route is tried (a 400 is the caller's and is not).
FALLBACK_ERRORS = (UpstreamFailed, Unavailable, TimedOut)
Seed = Callable[[], Mapping[str, list[RouteEntry]]]
T = TypeVar("T")
# The backend that answered the request being served (or started its stream), for its usage row:
# set in the request's own context, so concurrent requests never see each other's.
SERVED: ContextVar[LLMBackend | None] = ContextVar("agentgate_llm_served", default=None)


class Router:
    name = "router"
    serves_messages = True  # each backend of a route gets a Messages call its own way (relay_for)

    def __init__(
        self,
        backends: Mapping[str, LLMBackend],
        db: Database | None,
        seed: Seed,
        clock: Clock,
        *,
        check_seconds: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        self.backends = dict(backends)
        self._db = db
        self._seed = seed
        self._clock = clock
        self._check_seconds = check_seconds
        self._rng = rng or random.Random()
        self._table: RoutingTable | None = None
        self._checked_at = float("-inf")
        self._checking = False
        self._loading = asyncio.Lock()

    # -- the routing table -------------------------------------------------------------------

    async def table(self) -> RoutingTable:
        """The current table; loads it on first use and re-checks the revision when due."""
        table = self._table
        if table is None:
            return await self._first_load()
        if not self._checking and self._clock.now() - self._checked_at >= self._check_seconds:
            await self._check()  # one request per process and second pays one small query
        return self._table or table

    async def refresh(self) -> RoutingTable:
        """Re-check now (for the admin route after a write, and for tests)."""
        if self._table is None:
            return await self._first_load()
        await self._check()
        return self._table

    async def _first_load(self) -> RoutingTable:
        async with self._loading:
            if self._table is None:
                self._checked_at = self._clock.now()
                self._install(await self._seeded())
        return self._table  # type: ignore[return-value]

    async def _seeded(self) -> RoutingTable:
        try:
            if self._db is None:
                return RoutingTable.build(0, self._seed())
            return await ensure_seeded(self._db, self._seed())
        except (SQLAlchemyError, OSError) as exc:
            # Availability first: serve the settings' table and retry the database on next check.
            log.warning("llm routing table unreadable (%s); using the settings' table", type(exc).__name__)
            return RoutingTable.build(0, self._seed())

    async def _check(self) -> None:
        if self._db is None:
            return
        self._checking = True
        self._checked_at = self._clock.now()
        try:
            current = self._table.revision if self._table else 0
            if current == 0:
                self._install(await self._seeded())
                return
            revision = await read_revision(self._db)
            if revision is not None and revision != current:
                table = await read_table(self._db)
                if table is not None:
                    self._install(table)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("llm routing revision check failed (%s); keeping revision", type(exc).__name__)
        finally:
            self._checking = False

    def _install(self, table: RoutingTable) -> None:
        previous = self._table.revision if self._table else None
        self._table = table
        if previous != table.revision:
            log.info("llm routing table revision %d: %d models", table.revision, len(table.routes))
            for model, route in table.routes.items():
                for entry in route.entries:
                    if entry.backend not in self.backends:
                        log.warning("llm route %s names unknown backend %s: skipped", model, entry.backend)

    async def models(self) -> list[str]:
        """Every routable public model id."""
        return sorted((await self.table()).routes)

    async def _order(self, model: str) -> list[LLMBackend]:
        route = (await self.table()).routes.get(model)
        if route is None:
            raise ModelNotFound(f"The model '{model}' does not exist or is not routable.", param="model")
        backends = self.backends
        order = [backends[e.backend] for e in route.order(self._rng) if e.backend in backends]
        if not order:
            raise Unavailable(f"No backend is configured for the model '{model}'.", retry_after=5)
        return order

    # -- LLMBackend and RelayBackend --------------------------------------------------------------

    async def complete(self, request: ChatRequest) -> Completion:
        return await _first_answer(await self._order(request.model), lambda b: b.complete(request))

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        return self._fall_back(request.model, lambda backend: backend.stream(request))

    async def relay(self, call: Call) -> Answer:
        return await _first_answer(await self._order(call.model), lambda b: relay_for(b, call).relay(call))

    def relay_stream(self, call: Call) -> AsyncIterator[Chunk]:
        return self._fall_back(call.model, lambda backend: relay_for(backend, call).relay_stream(call))

    async def _fall_back(
        self, model: str, open_stream: Callable[[LLMBackend], AsyncIterator[T]]
    ) -> AsyncIterator[T]:
        """The first backend's stream that yields anything; the next one after a failure before."""
        order = await self._order(model)
        last = len(order) - 1
        for index, backend in enumerate(order):
            yielded = False
            try:
                async with aclosing(open_stream(backend)) as items:  # type: ignore[type-var]
                    async for item in items:
                        if not yielded:
                            yielded = True
                            SERVED.set(backend)
                        yield item
                return
            except FALLBACK_ERRORS as exc:
                if yielded:
                    # Bytes are out: no retry, no fallback; the route ends the SSE with an error event.
                    code = "upstream_timeout" if isinstance(exc, TimedOut) else "upstream_error"
                    raise UpstreamFailed(f"The upstream stream broke off: {exc.message}", code=code) from exc
                if index == last:
                    raise
                log.warning("llm backend %s failed (%s); falling back", backend.name, exc.message)

    async def aclose(self) -> None:
        for backend in self.backends.values():
            close = getattr(backend, "aclose", None)
            if close is not None:
                await close()


async def _first_answer(order: list[LLMBackend], ask: Callable[[LLMBackend], Awaitable[T]]) -> T:
    """The first backend's answer; the next one after a failure that allows a fallback."""
    for backend in order[:-1]:
        try:
            answer = await ask(backend)
        except FALLBACK_ERRORS as exc:
            log.warning("llm backend %s failed (%s); falling back", backend.name, exc.message)
            continue
        SERVED.set(backend)
        return answer
    answer = await ask(order[-1])
    SERVED.set(order[-1])
    return answer


def build_router(
    settings: Settings, db: Database | None, clock: Clock, catalogue: Callable[[], Iterable[tuple[str, str]]]
) -> Router:
    """The mock plus one backend (one pooled client) per configured upstream, of its dialect."""
    backends: dict[str, LLMBackend] = {MOCK_BACKEND: MockBackend()}
    for upstream in settings.upstreams:
        if upstream.name in backends:
            raise ValueError(f"AGENTGATE_UPSTREAMS: the name {upstream.name!r} is used twice")
        backends[upstream.name] = upstream_class(upstream)(
            upstream,
            connect_timeout=settings.llm_connect_timeout_seconds,
            read_timeout=settings.llm_read_timeout_seconds,
            retries=settings.llm_retries,
            backoff=settings.llm_retry_backoff_seconds,
            max_connections=settings.llm_max_connections,
            transport_kind=settings.llm_http_transport,
        )

    def seed() -> dict[str, list[RouteEntry]]:
        return seed_routes(settings.upstreams, settings.routes, catalogue(), settings.sandbox)

    return Router(backends, db, seed, clock, check_seconds=settings.llm_routing_check_seconds)
