"""``Batches``: what the /v1/batches routes call (create, get, list, cancel), and the OpenAI object."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from agent_server.batches.lines import TARGETS
from agent_server.batches.store import BatchStore
from agent_server.batches.tables import CANCELLED, CANCELLING, FINAL, RUNNING, VALIDATING, BatchRecord
from agent_server.files.service import Files, utc_seconds
from agent_server.foundation.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from agent_server.gateway.auth import KeyPrincipal
from agent_server.jobs.service import Jobs

JOB_TYPE = "batch"
WINDOWS = {"24h": 24 * 3600}
MAX_METADATA = 16
MAX_PAGE = 100
MOMENTS = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")


def batch_view(batch: BatchRecord) -> dict[str, Any]:
    """The OpenAI batch object, plus ``discount_percent``: the plan's batch discount on its usage."""
    view: dict[str, Any] = {
        "id": batch.id,
        "object": "batch",
        "endpoint": batch.endpoint,
        "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
        "input_file_id": batch.input_file_id,
        "completion_window": batch.completion_window,
        "status": batch.status,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": int(utc_seconds(batch.created_at)),
        "expires_at": int(utc_seconds(batch.expires_at)),
    }
    for moment in MOMENTS:
        value = getattr(batch, f"{moment}_at")
        view[f"{moment}_at"] = int(utc_seconds(value)) if value is not None else None
    view["request_counts"] = {"total": batch.total, "completed": batch.completed, "failed": batch.failed}
    view["metadata"] = batch.batch_metadata
    view["discount_percent"] = batch.discount_percent
    return view


class Batches:
    def __init__(self, store: BatchStore, files: Files, jobs: Jobs) -> None:
        self.store, self.files, self.jobs = store, files, jobs

    async def create(self, principal: KeyPrincipal, key_digest: str, body: Any) -> BatchRecord:
        if not isinstance(body, dict):
            raise ValidationFailed("Send a JSON object with input_file_id, endpoint and completion_window.")
        endpoint, window = body.get("endpoint"), body.get("completion_window")
        if not isinstance(endpoint, str) or endpoint not in TARGETS:
            raise ValidationFailed(f"endpoint must be one of: {', '.join(TARGETS)}.", param="endpoint")
        if not isinstance(window, str) or window not in WINDOWS:
            raise ValidationFailed("completion_window must be 24h.", param="completion_window")
        scope = TARGETS[endpoint].scope
        if scope not in principal.scopes:
            raise PermissionDenied(
                f"This API key lacks the '{scope}' scope that {endpoint} needs; create a key with it."
            )
        metadata = _metadata(body.get("metadata"))
        file_id = body.get("input_file_id")
        if not isinstance(file_id, str):
            raise ValidationFailed(
                "input_file_id is required: the id of a file of purpose batch.", param="input_file_id"
            )
        source = await self.files.get(principal.tenant_id, file_id)
        if source.purpose != "batch" or not source.lines:
            raise ValidationFailed(f"The file {file_id} is not of purpose batch.", param="input_file_id")
        if source.endpoint != endpoint:
            raise ValidationFailed(
                f"The lines of {file_id} call {source.endpoint}; create the batch with that endpoint.",
                param="endpoint",
            )
        now = self.store.now()
        batch = BatchRecord(
            id=f"batch_{secrets.token_hex(12)}",
            tenant_id=principal.tenant_id,
            key_id=principal.key_id,
            key_digest=key_digest,
            endpoint=endpoint,
            input_file_id=file_id,
            completion_window=window,
            status=VALIDATING,
            batch_metadata=metadata,
            total=source.lines,
            discount_percent=self.files.discount(principal.plan),
            created_at=now,
            expires_at=now + timedelta(seconds=WINDOWS[window]),
        )
        await self.store.add(batch)
        await self.jobs.start(JOB_TYPE, {"batch_id": batch.id})
        return batch

    async def get(self, tenant_id: str, batch_id: str) -> BatchRecord:
        batch = await self.store.find(batch_id)
        if batch is None or batch.tenant_id != tenant_id:
            raise NotFound(f"No such batch: '{batch_id}'.", param="batch_id")
        return batch

    async def list(self, tenant_id: str, after: str | None, limit: int) -> tuple[list[BatchRecord], bool]:
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}.", param="limit")
        return await self.store.page(tenant_id, after, limit)

    async def cancel(self, tenant_id: str, batch_id: str) -> BatchRecord:
        """validating | in_progress -> cancelling; the runner stops starting lines within a second
        and moves the batch to cancelled with what finished kept."""
        batch = await self.get(tenant_id, batch_id)
        if batch.status in (CANCELLING, CANCELLED):
            return batch
        if batch.status in FINAL or not await self.store.move(batch_id, RUNNING, CANCELLING):
            batch = await self.get(tenant_id, batch_id)
            if batch.status not in (CANCELLING, CANCELLED):
                raise Conflict(f"The batch is already {batch.status}; it cannot be cancelled.")
            return batch
        return await self.get(tenant_id, batch_id)


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or len(value) > MAX_METADATA
        or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512
            for k, v in value.items()
        )
    ):
        raise ValidationFailed(
            f"metadata is at most {MAX_METADATA} string pairs (keys up to 64, values up to 512 characters).",
            param="metadata",
        )
    return value
