"""The request log's bodies: kept only for keys that opted in, for their retention, then deleted.

A key with ``log_bodies_days`` (1-90; null, the default, keeps none) has the request body (the JSON
the client sent) and the answer (the JSON answer, a stream's text joined, or the error) of each
relayed request stored in ``request_bodies``, each cut at ``MAX_BODY_CHARS``. Headers are never
stored: they carry the credentials. The row and its bodies share a ``row_token``; the usage writer
writes the bodies with its next batch (``UsageWriter.keep_body``), so keys that did not opt in pay
nothing but reading one field of the principal already in memory.

The housekeeping job (``agent_server/jobs``, once a minute, one process at a time with Redis)
deletes bodies whose ``expires_at`` has passed (``BodyRetention.purge``); reads ignore them already.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from sqlalchemy import delete, select

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import RequestBody
from agent_server.storage.db import Database

MAX_BODY_CHARS = 65_536  # per body; longer ones are cut and the row says ``truncated``
MAX_RETENTION_DAYS = 90
DAY_SECONDS = 86_400
PURGE_BATCH = 5_000  # rows per DELETE: a long backlog never holds one lock for long

Answer = bytes | str | AgentError | None


def new_token() -> str:
    """The ``row_token`` that names a row and its bodies (32 hex digits, as the usage log's)."""
    return secrets.token_hex(16)


def body_row(
    tenant_id: str, token: str, request: dict[str, Any] | None, answer: Answer, now: float, days: int
) -> dict[str, Any]:
    """The ``request_bodies`` row of one request, both bodies capped."""
    sent, cut_request = _capped(json.dumps(request, ensure_ascii=False) if request is not None else None)
    got, cut_answer = _capped(_answer_text(answer))
    return {
        "row_token": token,
        "tenant_id": tenant_id,
        "request": sent,
        "response": got,
        "truncated": cut_request or cut_answer,
        "created_at": utc(now),
        "expires_at": utc(now + days * DAY_SECONDS),
    }


def _answer_text(answer: Answer) -> str | None:
    if answer is None:
        return None
    if isinstance(answer, AgentError):  # what the client was told, in the gateway envelope's terms
        error = {"type": answer.gateway_type, "code": answer.code, "message": answer.message}
        if answer.param is not None:
            error["param"] = answer.param
        return json.dumps({"error": error}, ensure_ascii=False)
    if isinstance(answer, bytes):
        return answer.decode("utf-8", "replace")
    return answer


def _capped(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= MAX_BODY_CHARS:
        return text, False
    return text[:MAX_BODY_CHARS], True


async def body_of(db: Database, tenant_id: str, token: str, now: float) -> RequestBody | None:
    """The stored bodies of a row of this tenant, unless they expired."""
    query = select(RequestBody).where(
        RequestBody.row_token == token,  # type: ignore[arg-type]
        RequestBody.tenant_id == tenant_id,  # type: ignore[arg-type]
        RequestBody.expires_at > utc(now),  # type: ignore[arg-type]
    )
    async with db.session() as session:
        return (await session.execute(query)).scalars().first()


class BodyRetention:
    """The housekeeping step that deletes expired bodies."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db, self._clock = db, clock

    async def purge(self) -> int:
        """Delete every body past its ``expires_at``, a batch at a time; returns how many."""
        deleted, now = 0, utc(self._clock.now())
        expired = (
            select(RequestBody.row_token)
            .where(RequestBody.expires_at <= now)  # type: ignore[arg-type]
            .limit(PURGE_BATCH)
            .scalar_subquery()
        )
        statement = delete(RequestBody).where(RequestBody.row_token.in_(expired))  # type: ignore[attr-defined]
        while True:
            async with self._db.engine.begin() as conn:
                count = (await conn.execute(statement)).rowcount
            deleted += count
            if count < PURGE_BATCH:
                return deleted
