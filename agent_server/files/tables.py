"""The ``files`` record (one uploaded file) and ``file_chunks`` (content in the database store).

Migration 0020_files_batches creates them, with the batch tables (agent_server/batches/tables.py).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, LargeBinary
from sqlmodel import Field, SQLModel

from agent_server.batches import tables as batch_tables  # noqa: F401  (one import line for both)


class FileRecord(SQLModel, table=True):
    """A tenant's file; its bytes live in the store named by ``store``."""

    __tablename__ = "files"
    __table_args__ = (Index("ix_files_tenant_time", "tenant_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(max_length=40)
    purpose: str = Field(max_length=16)  # batch, batch_output, user_data
    filename: str = Field(max_length=255)
    bytes: int
    store: str = Field(max_length=16)  # directory or database
    lines: int | None = None  # request lines of a batch upload
    endpoint: str | None = Field(default=None, max_length=40)  # the url every line of a batch upload calls
    created_at: datetime
    expires_at: datetime = Field(index=True)


class FileChunk(SQLModel, table=True):
    """One piece (at most ``store.CHUNK_BYTES``) of a file's content in the database store."""

    __tablename__ = "file_chunks"

    file_id: str = Field(primary_key=True, max_length=40)
    seq: int = Field(primary_key=True)
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
