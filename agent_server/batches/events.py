"""The webhook events of batches: ``batch.completed`` and ``batch.failed`` (docs/admin-and-webhooks.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agent_server.foundation.events import Event


@dataclass(frozen=True, kw_only=True)
class BatchEvent(Event):
    batch_id: str
    status: str  # completed (batch.completed); failed, expired or cancelled (batch.failed)
    endpoint: str
    total: int
    completed: int
    failed: int
    output_file_id: str | None
    error_file_id: str | None


@dataclass(frozen=True, kw_only=True)
class BatchCompleted(BatchEvent):
    kind: ClassVar[str] = "batch.completed"


@dataclass(frozen=True, kw_only=True)
class BatchFailed(BatchEvent):
    """A batch that ended without running every line: failed validation, expired or cancelled."""

    kind: ClassVar[str] = "batch.failed"
