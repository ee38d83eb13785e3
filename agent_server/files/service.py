"""``Files``: create (streamed to the store), list, get, read and delete a tenant's files.

A tenant sees only its own files: another tenant's id is 404, like an id that never existed. Files
expire ``retention`` seconds after upload (docs/batches.md, "Retention"); the job sweep deletes them.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_
from sqlmodel import col, select

from agent_server.capabilities.services import Services
from agent_server.files.jsonl import check_batch_file
from agent_server.files.store import DatabaseStore, DirectoryStore, FileStore
from agent_server.files.tables import FileRecord
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotFound, PayloadTooLarge, ValidationFailed
from agent_server.foundation.timeutil import utc
from agent_server.gateway.plans import PlanInfo
from agent_server.knowledge.pack import Plan
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.files")
UPLOAD_PURPOSES = ("batch", "user_data")
OUTPUT_PURPOSE = "batch_output"
DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024  # plans with files whose plans.yaml names no limit
MAX_PAGE = 10_000


def new_file_id() -> str:
    return f"file-{secrets.token_hex(12)}"


def file_view(record: FileRecord) -> dict[str, Any]:
    """The OpenAI file object."""
    return {
        "id": record.id,
        "object": "file",
        "bytes": record.bytes,
        "created_at": int(utc_seconds(record.created_at)),
        "expires_at": int(utc_seconds(record.expires_at)),
        "filename": record.filename,
        "purpose": record.purpose,
        "status": "processed",
        "status_details": None,
    }


def utc_seconds(value: datetime) -> float:
    """Unix seconds of a stored time; a naive value (SQLite) is UTC."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


class Files:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        store: FileStore,
        stores: Iterable[FileStore],
        plans: Callable[[], list[Plan]],
        *,
        retention: float,
        max_line: int,
    ) -> None:
        self.db, self.clock, self.store, self.plans = db, clock, store, plans
        self.stores = {s.name: s for s in stores}  # a file is read from the store that holds it
        self.retention, self.max_line = retention, max_line

    def max_bytes(self, plan: PlanInfo) -> int:
        """The plan's upload limit: ``max_file_bytes`` in plans.yaml, else the default."""
        declared = next((p.max_file_bytes for p in self.plans() if p.id == plan.id), None)
        return declared or DEFAULT_MAX_FILE_BYTES

    def discount(self, plan: PlanInfo) -> int:
        """The plan's ``batch_discount`` in percent (0 for a plan plans.yaml does not name)."""
        return next((p.batch_discount for p in self.plans() if p.id == plan.id), 0)

    async def create(
        self,
        tenant_id: str,
        plan: PlanInfo,
        content: AsyncIterator[bytes],
        fields: Callable[[], dict[str, str]],
    ) -> FileRecord:
        """Stream ``content`` into the store within the plan's limit; ``fields()`` gives the form's
        other fields once the content is read (a client may send ``purpose`` after the file)."""
        file_id, limit = new_file_id(), self.max_bytes(plan)
        try:
            size = await self.store.write(file_id, _limited(content, limit, plan.name))
            form = fields()
            purpose, filename = form.get("purpose", ""), form.get("filename") or "upload"
            if purpose not in UPLOAD_PURPOSES:
                raise ValidationFailed(
                    f"purpose must be one of: {', '.join(UPLOAD_PURPOSES)}.", param="purpose"
                )
            lines = endpoint = None
            if purpose == "batch":
                lines, endpoint = await check_batch_file(self.store.read(file_id), self.max_line)
        except BaseException:
            await self._forget(file_id)
            raise
        return await self._record(file_id, tenant_id, purpose, filename[:255], size, lines, endpoint)

    async def put(
        self, tenant_id: str, purpose: str, filename: str, content: AsyncIterator[bytes]
    ) -> FileRecord:
        """A file the service writes (a batch's output or errors)."""
        file_id = new_file_id()
        try:
            size = await self.store.write(file_id, content)
        except BaseException:
            await self._forget(file_id)
            raise
        return await self._record(file_id, tenant_id, purpose, filename, size, None, None)

    async def _record(
        self,
        file_id: str,
        tenant_id: str,
        purpose: str,
        filename: str,
        size: int,
        lines: int | None,
        endpoint: str | None,
    ) -> FileRecord:
        now = utc(self.clock.now())
        record = FileRecord(
            id=file_id,
            tenant_id=tenant_id,
            purpose=purpose,
            filename=filename,
            bytes=size,
            store=self.store.name,
            lines=lines,
            endpoint=endpoint,
            created_at=now,
            expires_at=now + timedelta(seconds=self.retention),
        )
        async with self.db.session() as session:
            session.add(record)
        return record

    async def _forget(self, file_id: str) -> None:
        try:
            await self.store.delete(file_id)
        except Exception:  # the sweep cannot find content without a record; say so once
            log.warning("content of the refused upload %s was not deleted", file_id)

    async def get(self, tenant_id: str, file_id: str) -> FileRecord:
        async with self.db.session() as session:
            record = await session.get(FileRecord, file_id)
        if record is None or record.tenant_id != tenant_id or record.expires_at <= utc(self.clock.now()):
            raise NotFound(f"No such file: '{file_id}'.", param="file_id")
        return record

    def read(self, record: FileRecord) -> AsyncIterator[bytes]:
        return self.stores[record.store].read(record.id)

    async def list(
        self, tenant_id: str, *, after: str | None, limit: int, purpose: str | None, newest_first: bool
    ) -> tuple[list[FileRecord], bool]:
        """A page of files and whether more follow; ``after`` is the last id of the previous page."""
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}.", param="limit")
        query = select(FileRecord).where(
            col(FileRecord.tenant_id) == tenant_id, col(FileRecord.expires_at) > utc(self.clock.now())
        )
        if purpose:
            query = query.where(col(FileRecord.purpose) == purpose)
        if after:
            cursor = await self.get(tenant_id, after)
            query = query.where(_beyond(cursor, newest_first))
        order = (col(FileRecord.created_at), col(FileRecord.id))
        query = query.order_by(*(c.desc() for c in order) if newest_first else order).limit(limit + 1)
        async with self.db.session() as session:
            rows = list((await session.execute(query)).scalars())
        return rows[:limit], len(rows) > limit

    async def delete(self, tenant_id: str, file_id: str) -> FileRecord:
        record = await self.get(tenant_id, file_id)
        await self._drop(record)
        return record

    async def _drop(self, record: FileRecord) -> None:
        async with self.db.session() as session:
            found = await session.get(FileRecord, record.id)
            if found is not None:
                await session.delete(found)
        await self.stores[record.store].delete(record.id)

    async def purge(self) -> int:
        """Delete files past their retention, content and record."""
        async with self.db.session() as session:
            query = select(FileRecord).where(col(FileRecord.expires_at) <= utc(self.clock.now())).limit(500)
            expired = list((await session.execute(query)).scalars())
        for record in expired:
            await self._drop(record)
        return len(expired)


def _beyond(cursor: FileRecord, newest_first: bool) -> Any:
    """Rows after the cursor in the page order (created_at, then id)."""
    created, ident = col(FileRecord.created_at), col(FileRecord.id)
    if newest_first:
        return or_(created < cursor.created_at, and_(created == cursor.created_at, ident < cursor.id))
    return or_(created > cursor.created_at, and_(created == cursor.created_at, ident > cursor.id))


async def _limited(content: AsyncIterator[bytes], limit: int, plan: str) -> AsyncIterator[bytes]:
    size = 0
    async for piece in content:
        size += len(piece)
        if size > limit:
            raise PayloadTooLarge(
                f"The file is larger than {limit} bytes, the upload limit of the {plan} plan.",
                param="file",
            )
        yield piece


def files_for(services: Services) -> Files:
    """The app's ``Files`` with the store the settings choose (``files_store``)."""
    settings = services.settings
    directory = DirectoryStore(settings.data_dir / "files")
    database = DatabaseStore(services.db)
    choice = settings.files_store
    if choice == "auto":
        choice = "database" if settings.database_url else "directory"
    return Files(
        services.db,
        services.clock,
        database if choice == "database" else directory,
        (directory, database),
        lambda: services.knowledge.pack.plans,
        retention=settings.files_retention_days * 86_400,
        max_line=settings.max_request_bytes,  # a request line may be as large as a live request body
    )
