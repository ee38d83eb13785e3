"""Playground chats with a recorded trace: which backend, every attempt, latency, tokens, errors.

The chat takes the gateway's LLM path: with the router (``services.llm``) the trace follows the
router's own route order and fallback rule, one step per attempt; any other backend is one attempt.
Prompts and answers are not stored in the trace, only their sizes: traces are operational data
and must not become a second copy of tenants' conversations.
"""

from __future__ import annotations

import random
import time
from typing import Any

from sqlalchemy import func, select

from agent_server.admin.tables import TraceRecord
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError, ModelNotFound, NotFound, Unavailable
from agent_server.llm.router import FALLBACK_ERRORS, Router
from agent_server.llm.types import ChatRequest, Completion, LLMBackend
from agent_server.storage.db import Database
from agent_server.webhooks.repository import iso, new_id, utc


class TraceRecorder:
    def __init__(self, started: float) -> None:
        self.started = started
        self.steps: list[dict[str, Any]] = []

    def step(self, kind: str, **detail: Any) -> None:
        at_ms = round((time.perf_counter() - self.started) * 1000, 2)
        self.steps.append({"seq": len(self.steps) + 1, "at_ms": at_ms, "kind": kind, **detail})


async def _plan(
    llm: LLMBackend, model: str, rng: random.Random
) -> tuple[list[tuple[str, LLMBackend]], int | None]:
    """The backends to try, in the order the router would, and the routing revision used."""
    if not isinstance(llm, Router):
        return [(getattr(llm, "name", "backend"), llm)], None
    table = await llm.table()
    route = table.routes.get(model)
    if route is None:
        raise ModelNotFound(f"The model '{model}' does not exist or is not routable.", param="model")
    order = [(e.backend, llm.backends[e.backend]) for e in route.order(rng) if e.backend in llm.backends]
    if not order:
        raise Unavailable(f"No backend is configured for the model '{model}'.", retry_after=5)
    return order, table.revision


async def traced_complete(
    llm: LLMBackend, request: ChatRequest, recorder: TraceRecorder, rng: random.Random
) -> tuple[Completion, str]:
    """Complete ``request`` like the router does, recording each attempt; returns (completion, backend)."""
    recorder.step(
        "request", model=request.model, messages=len(request.messages), max_tokens=request.max_tokens
    )
    order, revision = await _plan(llm, request.model, rng)
    recorder.step("route", revision=revision, order=[name for name, _ in order])
    for index, (name, backend) in enumerate(order):
        started = time.perf_counter()
        try:
            completion = await backend.complete(request)
        except AgentError as exc:
            latency = round((time.perf_counter() - started) * 1000, 2)
            recorder.step("attempt", backend=name, ok=False, latency_ms=latency, error=exc.code)
            if isinstance(exc, FALLBACK_ERRORS) and index < len(order) - 1:
                continue
            raise
        latency = round((time.perf_counter() - started) * 1000, 2)
        recorder.step("attempt", backend=name, ok=True, latency_ms=latency)
        usage = completion.usage
        recorder.step(
            "result",
            finish_reason=completion.finish_reason,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            characters=len(completion.content),
        )
        return completion, name
    raise Unavailable("No backend answered.")  # unreachable: the last attempt returns or raises


class Traces:
    def __init__(self, db: Database, clock: Clock, rng: random.Random | None = None) -> None:
        self.db, self.clock, self.rng = db, clock, rng or random.Random()

    async def run_chat(
        self, llm: LLMBackend, request: ChatRequest, tenant_id: str, actor: str
    ) -> tuple[TraceRecord, Completion | None, AgentError | None]:
        """Run the chat and store its trace whatever the outcome; the error is returned, not raised."""
        started = time.perf_counter()
        recorder = TraceRecorder(started)
        completion: Completion | None = None
        backend: str | None = None
        error: AgentError | None = None
        try:
            completion, backend = await traced_complete(llm, request, recorder, self.rng)
        except AgentError as exc:
            error = exc
            recorder.step("error", code=exc.code, message=exc.message[:300])
        record = TraceRecord(
            id=new_id("trc_"),
            tenant_id=tenant_id,
            actor=actor,
            model=request.model,
            backend=backend,
            status="ok" if error is None else "error",
            latency_ms=int((time.perf_counter() - started) * 1000),
            prompt_tokens=completion.usage.prompt_tokens if completion else 0,
            completion_tokens=completion.usage.completion_tokens if completion else 0,
            steps=recorder.steps,
            error=None if error is None else f"{error.code}: {error.message}"[:500],
            created_at=utc(self.clock.now()),
        )
        async with self.db.session() as session:
            session.add(record)
        return record, completion, error

    async def get(self, tenant_id: str, trace_id: str) -> TraceRecord:
        async with self.db.session() as session:
            record = await session.get(TraceRecord, trace_id)
        if record is None or record.tenant_id != tenant_id:
            raise NotFound(f"No trace {trace_id}.", param="traceId")
        return record

    async def list(self, tenant_id: str, limit: int = 50) -> tuple[list[TraceRecord], int]:
        async with self.db.session() as session:
            query = (
                select(TraceRecord)
                .where(TraceRecord.tenant_id == tenant_id)
                .order_by(TraceRecord.created_at.desc(), TraceRecord.id)  # type: ignore[attr-defined]
                .limit(limit)
            )
            rows = list((await session.execute(query)).scalars())
            total = await session.scalar(
                select(func.count()).select_from(TraceRecord).where(TraceRecord.tenant_id == tenant_id)
            )
        return rows, int(total or 0)


def trace_view(record: TraceRecord, *, steps: bool = True) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": record.id,
        "model": record.model,
        "backend": record.backend,
        "status": record.status,
        "latency_ms": record.latency_ms,
        "usage": {
            "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens,
            "total_tokens": record.prompt_tokens + record.completion_tokens,
        },
        "attempts": sum(1 for s in record.steps if s.get("kind") == "attempt"),
        "error": record.error,
        "actor": record.actor,
        "created_at": iso(record.created_at),
    }
    if steps:
        view["steps"] = record.steps
    return view
