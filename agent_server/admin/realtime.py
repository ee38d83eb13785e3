"""Live counters of a tenant from the usage rows: requests, errors and tokens per model."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import case, func, select

from agent_server.gateway.tables import UsageRecord
from agent_server.storage.db import Database
from agent_server.webhooks.repository import iso, utc


async def counters(db: Database, tenant_id: str, now: float, window_seconds: int) -> dict[str, Any]:
    since = utc(now) - timedelta(seconds=window_seconds)
    c = UsageRecord.__table__.c  # type: ignore[attr-defined]
    query = (
        select(
            c.model,
            func.count().label("requests"),
            func.sum(case((c.status >= 400, 1), else_=0)).label("errors"),
            func.coalesce(func.sum(c.prompt_tokens), 0).label("prompt_tokens"),
            func.coalesce(func.sum(c.completion_tokens), 0).label("completion_tokens"),
            func.avg(c.latency_ms).label("avg_latency_ms"),
        )
        .where(c.tenant_id == tenant_id, c.created_at >= since)
        .group_by(c.model)
        .order_by(c.model)
    )
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    models = [
        {
            "model": row.model,
            "requests": int(row.requests),
            "errors": int(row.errors or 0),
            "prompt_tokens": int(row.prompt_tokens),
            "completion_tokens": int(row.completion_tokens),
            "total_tokens": int(row.prompt_tokens) + int(row.completion_tokens),
            "avg_latency_ms": round(float(row.avg_latency_ms or 0.0), 2),
        }
        for row in rows
    ]
    totals = {
        key: sum(m[key] for m in models)
        for key in ("requests", "errors", "prompt_tokens", "completion_tokens", "total_tokens")
    }
    return {
        "object": "realtime",
        "window_seconds": window_seconds,
        "since": iso(since),
        "totals": totals,
        "models": models,
    }
