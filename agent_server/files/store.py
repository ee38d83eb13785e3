"""Where file content lives: one interface, two stores.

- ``DirectoryStore``: a file per upload under ``<data_dir>/files/`` (the embedded default: one host).
- ``DatabaseStore``: chunks of ``CHUNK_BYTES`` in the ``file_chunks`` table, so every process on
  every host that reaches the database (PostgreSQL) reads the same files, with no new service.

Both take the content as an async iterator of byte strings and never hold a whole file in memory.
A write that fails (a size limit, a client gone) leaves nothing: the caller deletes what was written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

import anyio
from sqlalchemy import delete, insert, select

from agent_server.files.tables import FileChunk
from agent_server.storage.db import Database

CHUNK_BYTES = 1 << 20  # one row of file_chunks; also the read size of the directory store
CHUNKS = FileChunk.__table__  # type: ignore[attr-defined]


class FileStore(Protocol):
    name: str  # recorded on the file, so a file is read from the store that holds it

    async def write(self, file_id: str, content: AsyncIterator[bytes]) -> int:
        """Store the content; returns its size in bytes."""
        ...

    def read(self, file_id: str) -> AsyncIterator[bytes]: ...

    async def delete(self, file_id: str) -> None: ...


class DirectoryStore:
    name = "directory"

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, file_id: str) -> Path:
        return self.root / file_id

    async def write(self, file_id: str, content: AsyncIterator[bytes]) -> int:
        await anyio.Path(self.root).mkdir(parents=True, exist_ok=True)
        size = 0
        async with await anyio.open_file(self._path(file_id), "wb") as target:
            async for piece in content:
                size += len(piece)
                await target.write(piece)
        return size

    async def read(self, file_id: str) -> AsyncIterator[bytes]:
        async with await anyio.open_file(self._path(file_id), "rb") as source:
            while piece := await source.read(CHUNK_BYTES):
                yield piece

    async def delete(self, file_id: str) -> None:
        await anyio.Path(self._path(file_id)).unlink(missing_ok=True)


class DatabaseStore:
    name = "database"

    def __init__(self, db: Database) -> None:
        self.db = db

    async def write(self, file_id: str, content: AsyncIterator[bytes]) -> int:
        size, seq, pending = 0, 0, bytearray()
        async for piece in content:
            size += len(piece)
            pending += piece
            while len(pending) >= CHUNK_BYTES:
                await self._put(file_id, seq, bytes(pending[:CHUNK_BYTES]))
                del pending[:CHUNK_BYTES]
                seq += 1
        if pending or seq == 0:
            await self._put(file_id, seq, bytes(pending))
        return size

    async def _put(self, file_id: str, seq: int, data: bytes) -> None:
        async with self.db.engine.begin() as conn:
            await conn.execute(insert(CHUNKS).values(file_id=file_id, seq=seq, data=data))

    async def read(self, file_id: str) -> AsyncIterator[bytes]:
        seq = 0
        while True:  # one chunk per query: a large file never sits in memory whole
            async with self.db.engine.connect() as conn:
                data = await conn.scalar(
                    select(CHUNKS.c.data).where(CHUNKS.c.file_id == file_id, CHUNKS.c.seq == seq)
                )
            if data is None:
                return
            if data:
                yield bytes(data)
            seq += 1

    async def delete(self, file_id: str) -> None:
        async with self.db.engine.begin() as conn:
            await conn.execute(delete(CHUNKS).where(CHUNKS.c.file_id == file_id))
