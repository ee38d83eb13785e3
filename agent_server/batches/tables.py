"""The ``batches`` record and ``batch_results``, one row per finished input line.

A line's row is inserted once (primary key batch id + line number) in the same transaction that
moves the batch's counts, so a line a killed worker already recorded is never counted, nor billed,
again (docs/batches.md, "Exactly once").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

VALIDATING, IN_PROGRESS, FINALIZING = "validating", "in_progress", "finalizing"
COMPLETED, FAILED, EXPIRED = "completed", "failed", "expired"
CANCELLING, CANCELLED = "cancelling", "cancelled"
RUNNING = (VALIDATING, IN_PROGRESS)  # lines may still start
FINAL = (COMPLETED, FAILED, EXPIRED, CANCELLED)


class BatchRecord(SQLModel, table=True):
    __tablename__ = "batches"

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(max_length=40, index=True)
    key_id: str = Field(max_length=40)
    key_digest: str = Field(max_length=64)  # the key the lines run as (its stored digest, never the key)
    endpoint: str = Field(max_length=40)
    input_file_id: str = Field(max_length=40)
    completion_window: str = Field(max_length=8)
    status: str = Field(max_length=16)
    batch_metadata: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON(none_as_null=True)))
    total: int = 0
    completed: int = 0
    failed: int = 0
    discount_percent: int = 0  # the plan's batch discount when the batch was created
    output_file_id: str | None = Field(default=None, max_length=40)
    error_file_id: str | None = Field(default=None, max_length=40)
    errors: list[Any] | None = Field(default=None, sa_column=Column(JSON(none_as_null=True)))
    created_at: datetime
    expires_at: datetime
    heartbeat_at: datetime | None = None  # a slice's last sign of life; stale: the sweep resumes the batch
    in_progress_at: datetime | None = None
    finalizing_at: datetime | None = None
    completed_at: datetime | None = None
    failed_at: datetime | None = None
    expired_at: datetime | None = None
    cancelling_at: datetime | None = None
    cancelled_at: datetime | None = None


class BatchResult(SQLModel, table=True):
    """The outcome of one input line, in OpenAI's output-line terms."""

    __tablename__ = "batch_results"

    batch_id: str = Field(primary_key=True, max_length=40)
    line: int = Field(primary_key=True)
    custom_id: str = Field(max_length=512)
    status_code: int
    request_id: str = Field(max_length=64)
    body: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON(none_as_null=True)))
    error: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON(none_as_null=True)))
