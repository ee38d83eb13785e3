"""A key's recent requests from its usage rows, newest first, for the dashboard's key page.

Until the request log (``/admin/logs``) is there, this is the key's short log. It reads only the
current month's rows of the tenant (the ``(tenant_id, created_at)`` index), at most ``limit`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from agent_server.gateway.spend import USAGE
from agent_server.storage.db import Database


@dataclass(frozen=True, slots=True)
class Request:
    created_at: datetime
    endpoint: str
    model: str
    status: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost_micros: int
    stream: bool


async def recent_requests(
    db: Database, tenant_id: str, key_id: str, since: datetime, limit: int = 20
) -> list[Request]:
    query = (
        select(
            USAGE.created_at,
            USAGE.endpoint,
            USAGE.model,
            USAGE.status,
            USAGE.prompt_tokens,
            USAGE.completion_tokens,
            USAGE.latency_ms,
            USAGE.cost_micros,
            USAGE.stream,
        )
        .where(USAGE.tenant_id == tenant_id, USAGE.created_at >= since, USAGE.key_id == key_id)
        .order_by(USAGE.created_at.desc(), USAGE.id.desc())
        .limit(limit)
    )
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    return [
        Request(at, endpoint, model, status, prompt, completion, latency, cost or 0, stream)
        for at, endpoint, model, status, prompt, completion, latency, cost, stream in rows
    ]
