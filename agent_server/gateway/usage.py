"""Usage records: durable before the response when Redis is configured, written to the database in
batches off the hot path (the usage API's report is ``usage_report.py``).

- **With Redis** (``log`` set): ``append`` RPUSHes the row to a Redis list before the request's
  response is sent (rows of requests arriving in the same loop turn share one RPUSH), so a killed
  server process loses no acknowledged usage. Every
  server drains the list into the database in batches; a lock in Redis lets one drainer run at a
  time, and each row carries a unique ``row_token`` inserted with ON CONFLICT DO NOTHING, so a
  drainer killed between its INSERT and its trim, or one whose lock expired, never counts a row
  twice. If Redis fails, the row falls back to the in-process list (the embedded path below).
- **Without Redis** (embedded, one process): ``append`` adds the row to an in-process list that a
  background task inserts in one statement every ``interval`` seconds (or at ``batch`` rows) and
  at shutdown. A kill -9 loses at most the last ``interval`` (0.5 s) of usage (docs/operations.md).
  Under more requests than the writer keeps up with, a request whose row finds ``high_water`` rows
  waiting (or being written) waits for the writer's batch before its response is sent: the loop
  shares its time fairly between the writer and every request, so without that the list grew by
  thousands of rows a second (43,000 rows and ~60 MB after 16 s at 5,700 requests/s on SQLite) and
  would have dropped rows at ``max_pending``. While the database is failing nobody waits; the list
  is then bounded: beyond ``max_pending`` rows are dropped and counted, not grown without end.

Every row is also the request log's entry (``request_log.py``). The bodies of a request whose key
opted in (``keep_body``) wait in this process and are written with its next batch, whether the row
went to Redis or not; they are diagnostics, so a killed process may lose the last ``interval`` of
them, never a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from typing import Any, NamedTuple, Protocol

from sqlalchemy import bindparam, insert, or_, update

from agent_server.foundation.tasks import wait_for_event
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import ApiKey, RequestBody, UsageRecord
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.usage")
USAGE_LOG = "usage:log"
DRAIN_LOCK = "usage:drain-lock"
USAGE_TABLE = UsageRecord.__table__  # type: ignore[attr-defined]
BODY_TABLE = RequestBody.__table__  # type: ignore[attr-defined]
MAX_PENDING_BODIES = 1_000  # each may be up to two capped bodies (request_log_bodies.MAX_BODY_CHARS)
_KEYS = ApiKey.__table__  # type: ignore[attr-defined]
# Only ever forward: a batch of older rows (a drain behind a process's own list) leaves it as is.
KEY_USED = (
    update(_KEYS)
    .where(
        _KEYS.c.id == bindparam("key"),
        or_(_KEYS.c.last_used_at.is_(None), _KEYS.c.last_used_at < bindparam("at")),
    )
    .values(last_used_at=bindparam("at"))
)


class UsageLog(Protocol):
    """The Redis list operations the durable path needs (``RedisKV`` has them)."""

    async def push_many(self, queue: str, values: list[bytes]) -> None: ...

    async def head(self, queue: str, count: int) -> list[bytes]: ...

    async def set_if_absent(self, key: str, value: bytes, ttl: float | None = None) -> bool: ...

    async def trim_if_owner(self, queue: str, count: int, lock: str, token: bytes) -> bool: ...


class UsageRow(NamedTuple):
    """One request's record. A tuple: built on every request, and ``_asdict`` copies nothing (unlike
    ``dataclasses.asdict``, which deep-copies every field and cost more than the request itself)."""

    tenant_id: str
    key_id: str
    model: str
    endpoint: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    status: int
    backend: str
    stream: bool
    created_at: float  # clock reading; turned into a datetime at flush, off the request path
    row_token: str | None = None  # set on rows that go through the Redis log
    # The contract that served the request (spec 9). Newer fields come last, so rows a previous
    # release left in the Redis log (shorter) still load with ``UsageRow(*fields)``.
    api_version: str | None = None
    cost_micros: int = 0  # millionths of a minor unit (model_table.ModelTable.cost)
    currency: str | None = None  # of the cost; None when the model is not priced or the key is a sandbox key
    # The request log (request_log.py): the edge's request id, the id the answering upstream was
    # sent and that backend, the error's code, a stream's time to its first content, a trace.
    request_id: str | None = None
    model_served: str | None = None
    upstream: str | None = None
    error_code: str | None = None
    ttft_ms: float | None = None
    trace_id: str | None = None


class UsageWriter:
    def __init__(
        self,
        db: Database,
        *,
        log: UsageLog | None = None,
        interval: float = 0.5,
        batch: int = 500,
        max_pending: int = 50_000,
        high_water: int = 2_000,
        lock_ttl: float = 10.0,
    ) -> None:
        self._db, self._log, self.interval, self.batch = db, log, interval, batch
        self.max_pending, self.high_water, self.lock_ttl = max_pending, high_water, lock_ttl
        self._pending: list[UsageRow] = []
        self._writing = 0  # rows of the insert in progress, still in memory
        self._written: asyncio.Event | None = None  # set when a flush attempt ends, then replaced
        self._failing = False  # the last insert failed: nobody waits for the writer
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._stopping = False
        self.dropped = 0
        self._outbox: list[UsageRow] = []  # rows of this loop turn, pushed together
        self._sending: asyncio.Task[None] | None = None
        self._bodies: list[dict[str, Any]] = []  # request_bodies rows of opted-in keys
        self.bodies_dropped = 0

    def record(self, row: UsageRow) -> None:
        """Queue a row in this process (written within ``interval``); no I/O."""
        if len(self._pending) >= self.max_pending:
            self.dropped += 1
            return
        self._pending.append(row)
        if len(self._pending) >= self.batch and self._wake is not None:
            self._wake.set()

    def keep_body(self, body: dict[str, Any]) -> None:
        """Queue a ``request_bodies`` row (its row carries the same ``row_token``); no I/O."""
        if len(self._bodies) >= MAX_PENDING_BODIES:
            self.bodies_dropped += 1
            return
        self._bodies.append(body)

    async def append(self, row: UsageRow) -> None:
        """Record a row of a request whose response is about to be sent: in the Redis log when one
        is configured (durable across a killed process), else in this process."""
        if self._log is None:
            await self._room()
            self.record(row)
            return
        # A row with a stored body has its token already: the body names the row by it.
        self._outbox.append(row if row.row_token else row._replace(row_token=secrets.token_hex(16)))
        if self._sending is None:
            self._sending = asyncio.get_running_loop().create_task(self._send(self._log))
        # Shielded: a request cancelled meanwhile must not cancel the push of the others' rows.
        await asyncio.shield(self._sending)

    async def _room(self) -> None:
        """Wait while ``high_water`` rows wait or are being written, unless the writer is failing
        (then the bounded list keeps serving) or stopped."""
        while (
            len(self._pending) + self._writing >= self.high_water
            and not self._failing
            and not self._stopping
            and self._task is not None
            and self._wake is not None
            and self._written is not None
        ):
            self._wake.set()
            await self._written.wait()

    async def _send(self, usage_log: UsageLog) -> None:
        """One RPUSH for the rows of every request that got here in the same loop turn: a Redis
        round trip costs ~0.1 ms of client CPU, so under load this group commit saves most of it."""
        await asyncio.sleep(0)
        rows, self._outbox, self._sending = self._outbox, [], None
        try:
            await usage_log.push_many(
                USAGE_LOG, [json.dumps(r, separators=(",", ":")).encode() for r in rows]
            )
        except Exception as exc:  # Redis away: keep the rows here, written by the batch writer
            log.debug("usage log unavailable (%s); %d rows kept in process", type(exc).__name__, len(rows))
            for row in rows:
                self.record(row)

    async def start(self) -> None:
        self._wake, self._lock, self._stopping = asyncio.Event(), asyncio.Lock(), False
        self._written = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="usage-writer")

    async def stop(self) -> None:
        # Ask the loop to finish rather than cancelling it: a cancel could land in the middle of an
        # insert and leave the driver's operation running after the engine is gone.
        if self._task is not None and self._wake is not None:
            self._stopping = True
            self._wake.set()
            await self._task
            self._task = None
            self._announce_written()  # requests waiting for room go on (their rows: the final flush)
        try:
            await self.flush()
        except Exception:
            log.exception("final usage flush failed; %d rows lost", len(self._pending))

    async def _run(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            await wait_for_event(self._wake, self.interval)
            self._wake.clear()
            try:
                await self.flush()
            except Exception as exc:
                log.warning(
                    "usage flush failed (%s); %d rows wait for the next try",
                    type(exc).__name__,
                    len(self._pending),
                )
            finally:
                self._announce_written()

    def _announce_written(self) -> None:
        if self._written is not None:
            self._written.set()
            self._written = asyncio.Event()

    async def flush(self) -> int:
        """Write every waiting row now (this process's, then the shared log); returns how many."""
        lock = self._lock or asyncio.Lock()
        async with lock:
            written = await self._flush_pending()
            if self._log is not None:
                written += await self._drain(self._log)
            return written

    async def _flush_pending(self) -> int:
        rows, self._pending = self._pending, []
        if rows:
            self._writing = len(rows)
            try:
                await self._insert(rows)
            except Exception:
                # Put them back (bounded) so a short database outage loses nothing.
                self._failing = True
                room = max(0, self.max_pending - len(self._pending))
                self.dropped += max(0, len(rows) - room)
                self._pending[:0] = rows[:room]
                raise
            finally:
                self._writing = 0
            self._failing = False
        if self._bodies:
            await self._insert_bodies()
        return len(rows)

    async def _drain(self, usage_log: UsageLog, max_batches: int = 20) -> int:
        """Move rows from the Redis log to the database, one locked batch at a time."""
        token, written = secrets.token_hex(8).encode(), 0
        for _ in range(max_batches):
            try:
                if not await usage_log.set_if_absent(DRAIN_LOCK, token, ttl=self.lock_ttl):
                    return written  # another process is draining
                items = await usage_log.head(USAGE_LOG, self.batch)
            except Exception as exc:  # Redis away: the rows wait there, nothing to do now
                log.debug("usage log unavailable (%s)", type(exc).__name__)
                return written
            try:
                if items:
                    await self._insert([UsageRow(*json.loads(item)) for item in items])
            except Exception:
                with contextlib.suppress(Exception):  # release the lock; the rows stay in the log
                    await usage_log.trim_if_owner(USAGE_LOG, 0, DRAIN_LOCK, token)
                raise
            # Trimmed only after the insert committed: a kill -9 in between re-inserts the batch,
            # which the row tokens turn into no-ops.
            await usage_log.trim_if_owner(USAGE_LOG, len(items), DRAIN_LOCK, token)
            written += len(items)
            if len(items) < self.batch:
                return written
        return written

    async def _insert(self, rows: list[UsageRow]) -> None:
        values = [{**row._asdict(), "created_at": utc(row.created_at)} for row in rows]
        statement: Any = insert(USAGE_TABLE)
        if any(row.row_token for row in rows):
            statement = _insert_once(self._db.engine.dialect.name)
        latest: dict[str, float] = {}
        for row in rows:
            if row.created_at > latest.get(row.key_id, 0.0):
                latest[row.key_id] = row.created_at
        # Keys in one order in every process: two writers' transactions cannot deadlock on them.
        used = [{"key": key, "at": utc(at)} for key, at in sorted(latest.items())]
        # Core executemany on a connection: the ORM's bulk path costs several times more per row.
        async with self._db.engine.begin() as conn:
            await conn.execute(statement, values)
            await conn.execute(KEY_USED, used)  # one statement per distinct key of the batch

    async def _insert_bodies(self) -> None:
        """The waiting bodies, after the rows; never in the rows' way: a failed insert drops them
        (counted and logged), since bodies are diagnostics and the rows are the record."""
        bodies, self._bodies = self._bodies, []
        try:
            # Once per token: a batch line run again (agent_server/batches) keeps its first bodies.
            statement = _insert_once(self._db.engine.dialect.name, BODY_TABLE)
            async with self._db.engine.begin() as conn:
                await conn.execute(statement, bodies)
        except Exception as exc:
            self.bodies_dropped += len(bodies)
            log.warning("%d request bodies not stored (%s)", len(bodies), type(exc).__name__)


def _insert_once(dialect: str, table: Any = USAGE_TABLE) -> Any:
    """INSERT ... ON CONFLICT (row_token) DO NOTHING on PostgreSQL and SQLite."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    return dialect_insert(table).on_conflict_do_nothing(index_elements=["row_token"])
