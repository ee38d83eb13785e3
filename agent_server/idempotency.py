"""Idempotency-Key for mutating requests: claim the key atomically, run once, store, replay 24 h.

The claim is an INSERT on the primary key of ``idempotency_records`` (an in-progress row), so
concurrent duplicates across processes cause exactly one execution; the database is the single
source of truth, never the cache. Policy (docs/public-api.md, "Idempotency"):

- the key is a UUID v4, bare or as a structured-field string (``"..."``); anything else is 400;
- the same key with the same body (canonical JSON) replays the stored status and body;
- the same key with another body is 409 ``idempotency_conflict`` (spec 7.2; the draft says 422);
- a duplicate that arrives while the first is still running waits up to ``wait`` seconds for the
  stored response, then gets 409 ``idempotency_in_progress`` with ``Retry-After: 1`` (draft);
- responses below 500 except 429 are stored; 5xx, 429 and crashes release the key for a retry;
- an in-progress claim whose process died is taken over after ``lease`` seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, IdempotencyConflict, ValidationFailed
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database
from agent_server.storage.records import IdempotencyRecord

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotency-Replayed"
IN_PROGRESS = 0  # status_code of a claimed key whose response is not stored yet
_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.IGNORECASE)


def parse_key(raw: str) -> str:
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not _UUID4.match(value):
        raise ValidationFailed(
            f"The {HEADER} header must be a UUID v4, e.g. 8e03978e-40d5-43e8-bc93-6894a57f9324.",
            code="invalid_idempotency_key",
            param=HEADER,
        )
    return value.lower()


def body_digest(body: bytes) -> str:
    """SHA-256 of the body; JSON is canonicalised so key order and spacing do not matter."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, UnicodeDecodeError):
        canonical = body
    return hashlib.sha256(canonical).hexdigest()


def should_store(status_code: int) -> bool:
    return status_code < 500 and status_code != 429


@dataclass(frozen=True)
class StoredResponse:
    status_code: int
    body: str
    content_type: str


class IdempotencyStore:
    def __init__(self, db: Database, clock: Clock, *, ttl: float, lease: float = 60.0, wait: float = 3.0):
        self.db, self.clock, self.ttl, self.lease, self.wait = db, clock, ttl, lease, wait

    def _now(self) -> datetime:
        return utc(self.clock.now())

    async def claim(self, scope_key: str, digest: str) -> StoredResponse | None:
        """None when this caller now owns the key (run, then ``complete`` or ``release``);
        otherwise the stored response to replay."""
        deadline = time.monotonic() + self.wait
        while True:
            now = self._now()
            async with self.db.session() as session:
                record = await session.get(IdempotencyRecord, scope_key)
            if record is None or record.expires_at <= now:
                if record is not None:
                    await self._delete_expired(scope_key, now)
                if await self._insert(scope_key, digest, now):
                    return None
                continue  # another request claimed it first: read its row
            if record.body_digest != digest:
                raise IdempotencyConflict(
                    f"This {HEADER} was already used with a different request body; use a new key.",
                    param=HEADER,
                )
            if record.status_code != IN_PROGRESS:
                return StoredResponse(record.status_code, record.response_body, record.content_type)
            if time.monotonic() >= deadline:
                raise Conflict(
                    f"A request with this {HEADER} is still in progress; retry with the same key shortly.",
                    code="idempotency_in_progress",
                    param=HEADER,
                    retry_after=1,
                )
            await asyncio.sleep(0.05)  # polling another request's completion, not a time window

    async def _insert(self, scope_key: str, digest: str, now: datetime) -> bool:
        record = IdempotencyRecord(
            scope_key=scope_key,
            body_digest=digest,
            status_code=IN_PROGRESS,
            response_body="",
            content_type="",
            created_at=now,
            expires_at=now + timedelta(seconds=self.lease),
        )
        try:
            async with self.db.session() as session:
                session.add(record)
        except IntegrityError:
            return False
        return True

    async def _delete_expired(self, scope_key: str, now: datetime) -> None:
        async with self.db.session() as session:
            await session.execute(
                delete(IdempotencyRecord).where(
                    col(IdempotencyRecord.scope_key) == scope_key, col(IdempotencyRecord.expires_at) <= now
                )
            )

    async def complete(self, scope_key: str, response: StoredResponse) -> None:
        """Store the response; it is replayed until 24 h after the first request."""
        async with self.db.session() as session:
            record = await session.get(IdempotencyRecord, scope_key)
            if record is None or record.status_code != IN_PROGRESS:
                return
            record.status_code = response.status_code
            record.response_body = response.body
            record.content_type = response.content_type
            record.expires_at = record.created_at + timedelta(seconds=self.ttl)

    async def release(self, scope_key: str) -> None:
        """Forget an unfinished claim, so a retry with the same key runs again."""
        async with self.db.session() as session:
            await session.execute(
                delete(IdempotencyRecord).where(
                    col(IdempotencyRecord.scope_key) == scope_key,
                    col(IdempotencyRecord.status_code) == IN_PROGRESS,
                )
            )

    async def purge(self) -> int:
        """Delete expired records; returns how many."""
        async with self.db.session() as session:
            result = await session.execute(
                delete(IdempotencyRecord).where(col(IdempotencyRecord.expires_at) <= self._now())
            )
        return int(getattr(result, "rowcount", 0) or 0)
