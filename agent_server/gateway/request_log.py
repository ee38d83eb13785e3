"""The request log: a tenant's usage rows, newest first, filtered and paged by a keyset cursor.

Every /v1 and /v2 request after admission is a usage row (``usage.py``), and that row is the log's
entry: nothing else is written on the request path. ``GET /admin/logs`` and ``/app/logs`` call
``list_requests``; ``GET /admin/logs/{request_id}`` and its page call ``find_request``.

A page is ``WHERE tenant_id = ? [AND one filter] AND (created_at, id) < cursor ORDER BY created_at
DESC, id DESC LIMIT n``: one range of an index that starts with the tenant and ends with the order
(``tables.UsageRecord``), so it costs the same at ten million rows as at ten (docs/request-log.md).
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from sqlalchemy import literal_column, select, tuple_
from sqlalchemy.sql import Select

from agent_server.foundation.errors import NotFound, ValidationFailed
from agent_server.foundation.timeutil import utc
from agent_server.gateway.key_settings import Moment
from agent_server.gateway.request_log_bodies import body_of
from agent_server.gateway.spend import minor
from agent_server.gateway.tables import ApiKey, RequestBody, UsageRecord, unix
from agent_server.storage.db import Database

# What the usage rows' ``endpoint`` holds (http_facade/routes/gateway_*.py, admin_playground.py).
ENDPOINTS = (
    "chat",
    "completions",
    "embeddings",
    "responses",
    "messages",
    "messages.count_tokens",
    "models",
    "v2.chat",
    "v2.models",
    "playground",
)
STATUS_CLASSES = {"2xx": 2, "4xx": 4, "5xx": 5}
CACHE_BACKEND = "cache"  # response_cache.CACHE_BACKEND: a row answered from the response cache
PLAYGROUND_KEY = "playground"  # the key id of playground rows (admin_playground.py)
NO_CONTROL = r"^[^\x00-\x1f\x7f]+$"  # PostgreSQL text holds no NUL; ids and models hold no control characters
# What the edge passes on as a request id (agent_server/foundation/request_context.py): no other id is in the log.
REQUEST_ID_PATTERN = r"^[A-Za-z0-9._:/+=@-]{1,128}$"
EARLIEST, LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|z|[+-]\d\d:\d\d)").fullmatch
# The status class as the index ix_usage_records_tenant_class_time spells it: the literal 100 in
# the SQL (a bound parameter would not match the indexed expression on PostgreSQL).
_status_class = literal_column("usage_records.status / 100")


def _rfc3339(value: object) -> object:
    # What the document's ``format: date-time`` says, no more: pydantic alone would also take Unix
    # seconds and dates without a time.
    if isinstance(value, str) and not RFC3339(value):
        raise ValueError("expected a date and time such as 2026-05-18T10:00:00Z")
    return value


Time = Annotated[Moment, BeforeValidator(_rfc3339)]


class LogFilters(BaseModel):
    """The list's query parameters; a bad value is a 400 naming it."""

    model_config = ConfigDict(extra="ignore")

    key: str | None = Field(
        default=None,
        max_length=40,
        pattern=r"^[A-Za-z0-9_]+$",
        description="Only this key's requests (key_…, or playground).",
    )
    model: str | None = Field(
        default=None,
        max_length=200,
        pattern=NO_CONTROL,
        description="Only requests that asked for this model.",
    )
    status: Literal["2xx", "4xx", "5xx"] | None = Field(
        default=None, description="Only answers of this status class (499, a client that left, is 4xx)."
    )
    endpoint: Literal[ENDPOINTS] | None = Field(  # type: ignore[valid-type]
        default=None, description="Only requests of this endpoint (the usage rows' name)."
    )
    since: Time | None = Field(
        default=None, description="From this time on (RFC 3339: 2026-05-18T10:00:00Z)."
    )
    until: Time | None = Field(default=None, description="Before this time (RFC 3339).")
    limit: int = Field(default=50, ge=1, le=200, description="Requests per page.")
    cursor: str | None = Field(
        default=None, max_length=100, description="next_cursor of the previous page: the older requests."
    )

    @field_validator("since", "until")
    @classmethod
    def _plausible(cls, value: datetime | None) -> datetime | None:
        if value is not None and not EARLIEST <= value <= LATEST:
            raise ValueError("a time between 1970 and 9999 is expected")
        return value

    @field_validator("until")
    @classmethod
    def _after_since(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        since = info.data.get("since")
        if value is not None and since is not None and since >= value:
            raise ValueError("until must be after since")
        return value

    def query(self) -> dict[str, str]:
        """The filters (not the cursor) as query parameters, for the next page's link."""
        values = self.model_dump(exclude={"cursor", "limit"}, exclude_none=True)
        if self.limit != 50:
            values["limit"] = self.limit
        return {name: v.isoformat() if isinstance(v, datetime) else str(v) for name, v in values.items()}


def encode_cursor(created_at: datetime, row_id: int) -> str:
    """The position after a row: its time (microseconds) and id, opaque to clients."""
    micros = round(unix(created_at) * 1_000_000)
    return base64.urlsafe_b64encode(f"{micros}.{row_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        micros, _, row_id = (
            base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().partition(".")
        )
        position = int(micros), int(row_id)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValidationFailed("cursor is not a next_cursor of this list.", param="cursor") from None
    if not (0 <= position[0] < 10**17 and 0 <= position[1] < 2**63):
        raise ValidationFailed("cursor is not a next_cursor of this list.", param="cursor")
    return utc(position[0] / 1_000_000), position[1]


def _rows(tenant_id: str) -> Select[Any]:
    # The key's name, when the key exists (playground rows have none): a primary-key lookup per row.
    return (
        select(UsageRecord, ApiKey.name)
        .outerjoin(ApiKey, ApiKey.id == UsageRecord.key_id)  # type: ignore[arg-type]
        .where(UsageRecord.tenant_id == tenant_id)  # type: ignore[arg-type]
    )


def page_query(tenant_id: str, filters: LogFilters) -> Select[Any]:
    """The statement of one page: one more row than asked, to know whether another page follows."""
    record = UsageRecord
    query = _rows(tenant_id)
    if filters.key is not None:
        query = query.where(record.key_id == filters.key)  # type: ignore[arg-type]
    if filters.model is not None:
        query = query.where(record.model == filters.model)  # type: ignore[arg-type]
    if filters.status is not None:
        query = query.where(_status_class == STATUS_CLASSES[filters.status])
    if filters.endpoint is not None:
        query = query.where(record.endpoint == filters.endpoint)  # type: ignore[arg-type]
    if filters.since is not None:
        query = query.where(record.created_at >= filters.since)  # type: ignore[arg-type,operator]
    if filters.until is not None:
        query = query.where(record.created_at < filters.until)  # type: ignore[arg-type,operator]
    if filters.cursor is not None:
        query = query.where(tuple_(record.created_at, record.id) < tuple_(*decode_cursor(filters.cursor)))
    order = (record.created_at.desc(), record.id.desc())  # type: ignore[attr-defined,union-attr]
    return query.order_by(*order).limit(filters.limit + 1)


async def list_requests(db: Database, tenant_id: str, filters: LogFilters) -> dict[str, Any]:
    """One page of the tenant's requests, newest first, and the cursor of the next (older) one."""
    query = page_query(tenant_id, filters)
    async with db.session() as session:
        found = (await session.execute(query)).all()
    page, more = found[: filters.limit], len(found) > filters.limit
    last = page[-1][0] if page else None
    return {
        "object": "list",
        "data": [view(row, name) for row, name in page],
        "has_more": more,
        "next_cursor": encode_cursor(last.created_at, last.id) if more and last is not None else None,
    }


def request_query(tenant_id: str, request_id: str) -> Select[Any]:
    """The newest row of this tenant with this request id (a client may reuse its own ids)."""
    return (
        _rows(tenant_id)
        .where(UsageRecord.request_id == request_id)  # type: ignore[arg-type]
        .order_by(UsageRecord.created_at.desc(), UsageRecord.id.desc())  # type: ignore[attr-defined,union-attr]
        .limit(1)
    )


async def find_request(db: Database, tenant_id: str, request_id: str, now: float) -> dict[str, Any]:
    """One request with its stored bodies (when its key keeps them and they have not expired). A
    request id a client reused names its newest request; another tenant's is 404 like a missing one."""
    async with db.session() as session:
        found = (await session.execute(request_query(tenant_id, request_id))).first()
    if found is None:
        raise NotFound(f"No request {request_id} in this organisation's log.", param="request_id")
    row, name = found
    stored = await body_of(db, tenant_id, row.row_token, now) if row.row_token else None
    return {**view(row, name), "body": body_view(stored)}


def view(row: UsageRecord, key_name: str | None) -> dict[str, Any]:
    """A log entry as the JSON API (and the pages) show it."""
    micros = row.cost_micros
    return {
        "object": "request",
        "request_id": row.request_id,
        "created_at": unix(row.created_at),
        "key": {"id": row.key_id, "name": key_name},
        "endpoint": row.endpoint,
        "model": row.model,
        "model_served": row.model_served,
        "upstream": row.upstream,
        "backend": row.backend,
        "status": row.status,
        "error_code": row.error_code,
        "latency_ms": row.latency_ms,
        "ttft_ms": row.ttft_ms,
        "stream": row.stream,
        "cache_hit": row.backend == CACHE_BACKEND,
        "usage": {
            "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens,
            "total_tokens": row.prompt_tokens + row.completion_tokens,
        },
        "cost": minor(micros) if micros is not None else None,
        "cost_micros": micros,
        "currency": row.currency,
        "api_version": row.api_version,
        "trace_id": row.trace_id,
    }


def body_view(stored: RequestBody | None) -> dict[str, Any] | None:
    if stored is None:
        return None
    return {
        "request": stored.request,
        "response": stored.response,
        "truncated": stored.truncated,
        "expires_at": unix(stored.expires_at),
    }
