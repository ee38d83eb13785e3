"""Webhook endpoints and the delivery queue: every query is scoped by tenant (no cross-tenant reads).

The payload (docs/admin-and-webhooks.md) is ``{id, type, created_at, tenant_id, data}``; it is
serialised once at enqueue time and those exact bytes are signed and sent on every attempt.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, update

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.timeutil import utc  # also imported from here by the admin modules
from agent_server.storage.db import Database
from agent_server.webhooks.signing import new_secret
from agent_server.webhooks.tables import (
    DELIVERY_PENDING,
    WebhookAttemptRecord,
    WebhookDeliveryRecord,
    WebhookRecord,
)
from agent_server.webhooks.url_guard import UrlGuard

EVENT_TYPES = ("usage.threshold_reached", "key.rotated", "invoice.created", "audit.flagged")
TEST_EVENT = "webhook.test"


def iso(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with a Z; a naive value (a database without time zones) is taken as UTC."""
    if value is None:
        return None
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def build_payload(
    event_id: str, event_type: str, created: float, tenant_id: str, data: dict[str, Any]
) -> str:
    body = {
        "id": event_id,
        "type": event_type,
        "created_at": iso(utc(created)),
        "tenant_id": tenant_id,
        "data": data,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=str)


class WebhookRepository:
    def __init__(
        self, db: Database, box: SecretBox, clock: Clock, guard: UrlGuard, max_per_tenant: int
    ) -> None:
        self.db, self.box, self.clock, self.guard = db, box, clock, guard
        self.max_per_tenant = max_per_tenant

    def _now(self) -> datetime:
        return utc(self.clock.now())

    @staticmethod
    def _check_events(events: Sequence[str]) -> None:
        if not events or set(events) - set(EVENT_TYPES):
            raise ValidationFailed(
                f"events must be a non-empty subset of {', '.join(EVENT_TYPES)}.", param="events"
            )

    async def create(
        self, tenant_id: str, url: str, events: Sequence[str], description: str = ""
    ) -> tuple[WebhookRecord, str]:
        """Register an endpoint; returns it with its signing secret (shown this once only)."""
        self._check_events(events)
        await self.guard.resolve(url)  # checked again at every delivery: DNS answers change
        async with self.db.session() as session:
            count = await session.scalar(
                select(func.count())
                .select_from(WebhookRecord)
                .where(WebhookRecord.tenant_id == tenant_id, WebhookRecord.deleted_at.is_(None))  # type: ignore[union-attr]
            )
            if (count or 0) >= self.max_per_tenant:
                raise PermissionDenied(
                    f"A tenant may register at most {self.max_per_tenant} webhooks.", code="webhook_limit"
                )
            secret = new_secret()
            record = WebhookRecord(
                id=new_id("wh_"),
                tenant_id=tenant_id,
                url=url,
                events=sorted(set(events)),
                description=description,
                secret_encrypted=self.box.encrypt(secret),
                created_at=self._now(),
            )
            session.add(record)
        return record, secret

    async def list(self, tenant_id: str) -> list[WebhookRecord]:
        async with self.db.session() as session:
            result = await session.execute(
                select(WebhookRecord)
                .where(WebhookRecord.tenant_id == tenant_id, WebhookRecord.deleted_at.is_(None))  # type: ignore[union-attr]
                .order_by(WebhookRecord.created_at)
            )
            return list(result.scalars())

    async def get(self, tenant_id: str, webhook_id: str) -> WebhookRecord:
        """The tenant's endpoint; another tenant's id is indistinguishable from a missing one (404)."""
        async with self.db.session() as session:
            record = await session.get(WebhookRecord, webhook_id)
        if record is None or record.tenant_id != tenant_id or record.deleted_at is not None:
            raise NotFound(f"No webhook {webhook_id}.", param="id")
        return record

    async def delete(self, tenant_id: str, webhook_id: str) -> None:
        """Soft delete (the delivery log stays readable for audit); pending deliveries stop."""
        await self.get(tenant_id, webhook_id)
        now = self._now()
        async with self.db.session() as session:
            await session.execute(
                update(WebhookRecord)
                .where(WebhookRecord.id == webhook_id)  # type: ignore[arg-type]
                .values(deleted_at=now, enabled=False, disabled_reason="deleted")
            )
            await session.execute(
                update(WebhookDeliveryRecord)
                .where(
                    WebhookDeliveryRecord.webhook_id == webhook_id,  # type: ignore[arg-type]
                    WebhookDeliveryRecord.status == DELIVERY_PENDING,  # type: ignore[arg-type]
                )
                .values(status="cancelled", finished_at=now, last_error="webhook deleted")
            )

    async def enqueue(
        self,
        tenant_id: str,
        event_type: str,
        data: dict[str, Any],
        *,
        event_id: str | None = None,
        occurred_at: float | None = None,
        webhook_id: str | None = None,
        lease: tuple[str, datetime] | None = None,
    ) -> list[str]:
        """Queue one delivery per enabled endpoint of the tenant subscribed to ``event_type``
        (or to ``webhook_id`` only, for a test ping, whose caller holds the ``lease`` so that
        no worker takes it). Returns the delivery ids."""
        event_id = event_id or new_id("evt_")
        payload = build_payload(event_id, event_type, occurred_at or self.clock.now(), tenant_id, data)
        now = self._now()
        ids: list[str] = []
        async with self.db.session() as session:
            query = select(WebhookRecord).where(
                WebhookRecord.tenant_id == tenant_id,
                WebhookRecord.enabled.is_(True),  # type: ignore[attr-defined]
                WebhookRecord.deleted_at.is_(None),  # type: ignore[union-attr]
            )
            if webhook_id is not None:
                query = query.where(WebhookRecord.id == webhook_id)
            for hook in (await session.execute(query)).scalars():
                if webhook_id is None and event_type not in hook.events:
                    continue
                delivery = WebhookDeliveryRecord(
                    id=new_id("dlv_"),
                    webhook_id=hook.id,
                    tenant_id=tenant_id,
                    event_id=event_id,
                    event_type=event_type,
                    payload=payload,
                    next_attempt_at=now,
                    created_at=now,
                    lease_owner=lease[0] if lease else None,
                    lease_until=lease[1] if lease else None,
                )
                session.add(delivery)
                ids.append(delivery.id)
        return ids

    async def redeliver(self, tenant_id: str, webhook_id: str, delivery_id: str) -> WebhookDeliveryRecord:
        """Queue an earlier delivery's event again for its endpoint: the same bytes and event id (so a
        receiver can tell a repeat), as a new delivery with attempts and retries of its own."""
        hook = await self.get(tenant_id, webhook_id)
        original, _ = await self.delivery(tenant_id, delivery_id)
        if original.webhook_id != webhook_id:
            raise NotFound(f"No delivery {delivery_id}.")
        if not hook.enabled:
            raise Conflict(f"The webhook is disabled ({hook.disabled_reason}); enable it first.")
        now = self._now()
        again = WebhookDeliveryRecord(
            id=new_id("dlv_"),
            webhook_id=webhook_id,
            tenant_id=tenant_id,
            event_id=original.event_id,
            event_type=original.event_type,
            payload=original.payload,
            next_attempt_at=now,
            created_at=now,
        )
        async with self.db.session() as session:
            session.add(again)
        return again

    async def update(self, tenant_id: str, webhook_id: str, changes: dict[str, Any]) -> WebhookRecord:
        """Change url, events, description or enabled; re-enabling clears the disabled reason."""
        record = await self.get(tenant_id, webhook_id)
        if "events" in changes:
            self._check_events(changes["events"])
            changes["events"] = sorted(set(changes["events"]))
        if "url" in changes:
            await self.guard.resolve(changes["url"])
        if changes.get("enabled") is True:
            changes["disabled_reason"] = None
        async with self.db.session() as session:
            record = await session.merge(record)
            for name, value in changes.items():
                setattr(record, name, value)
        return record

    async def rotate_secret(self, tenant_id: str, webhook_id: str) -> tuple[WebhookRecord, str]:
        """A new signing secret (returned this once only); every attempt from now on is signed with it,
        retries of earlier events included."""
        record = await self.get(tenant_id, webhook_id)
        secret = new_secret()
        async with self.db.session() as session:
            record = await session.merge(record)
            record.secret_encrypted = self.box.encrypt(secret)
        return record, secret

    async def delivery(
        self, tenant_id: str, delivery_id: str
    ) -> tuple[WebhookDeliveryRecord, list[WebhookAttemptRecord]]:
        async with self.db.session() as session:
            row = await session.get(WebhookDeliveryRecord, delivery_id)
            if row is None or row.tenant_id != tenant_id:
                raise NotFound(f"No delivery {delivery_id}.")
            found = await session.execute(
                select(WebhookAttemptRecord)
                .where(WebhookAttemptRecord.delivery_id == delivery_id)
                .order_by(WebhookAttemptRecord.attempt)
            )
            return row, list(found.scalars())

    async def deliveries(
        self, tenant_id: str, webhook_id: str, limit: int = 50
    ) -> list[tuple[WebhookDeliveryRecord, list[WebhookAttemptRecord]]]:
        """The newest deliveries of the tenant's endpoint, each with its attempts (oldest first)."""
        await self.get(tenant_id, webhook_id)
        async with self.db.session() as session:
            result = await session.execute(
                select(WebhookDeliveryRecord)
                .where(
                    WebhookDeliveryRecord.webhook_id == webhook_id,
                    WebhookDeliveryRecord.tenant_id == tenant_id,
                )
                .order_by(WebhookDeliveryRecord.created_at.desc(), WebhookDeliveryRecord.id)  # type: ignore[attr-defined]
                .limit(limit)
            )
            rows = list(result.scalars())
            attempts: dict[str, list[WebhookAttemptRecord]] = {row.id: [] for row in rows}
            if rows:
                found = await session.execute(
                    select(WebhookAttemptRecord)
                    .where(WebhookAttemptRecord.delivery_id.in_(list(attempts)))  # type: ignore[attr-defined]
                    .order_by(WebhookAttemptRecord.attempt)
                )
                for attempt in found.scalars():
                    attempts[attempt.delivery_id].append(attempt)
        return [(row, attempts[row.id]) for row in rows]
