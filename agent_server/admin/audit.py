"""The audit log: every administration action, with rules that flag suspicious entries.

A flagged entry publishes ``audit.flagged`` on the event bus (and so reaches the tenant's
webhooks). Rules are plain functions over the new entry and recent history, so adding one is a
function and a line in ``RULES``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.admin.tables import AuditRecord
from agent_server.foundation.clock import Clock
from agent_server.foundation.events import EventBus
from agent_server.storage.db import Database
from agent_server.webhooks.dispatcher import AuditFlagged
from agent_server.webhooks.repository import utc

LOGIN_FAILED = "auth.login_failed"
KEY_ACTIONS = ("api_key.create", "api_key.rotate", "POST /admin/api-keys", "POST /admin/keys/rotate")
Rule = Callable[["AuditLog", AsyncSession, AuditRecord], Awaitable[str | None]]


async def admin_scope_key(log: AuditLog, session: AsyncSession, entry: AuditRecord) -> str | None:
    scopes = entry.details.get("scopes") or []
    if entry.action in KEY_ACTIONS and entry.outcome == "ok" and "admin" in scopes:
        return "API key issued with the admin scope"
    return None


async def repeated_failed_logins(log: AuditLog, session: AsyncSession, entry: AuditRecord) -> str | None:
    """Flags the Nth failure within the window for one account or one IP (once per crossing)."""
    if entry.action != LOGIN_FAILED:
        return None
    since = entry.at - timedelta(seconds=log.failed_login_window)
    same_source = [AuditRecord.actor == entry.actor]
    if entry.ip:
        same_source.append(AuditRecord.ip == entry.ip)
    earlier = await session.scalar(
        select(func.count())
        .select_from(AuditRecord)
        .where(AuditRecord.action == LOGIN_FAILED, AuditRecord.at > since, or_(*same_source))
    )
    count = (earlier or 0) + 1
    if count == log.failed_login_limit:
        return f"{count} failed logins within {log.failed_login_window} s"
    return None


RULES: tuple[Rule, ...] = (admin_scope_key, repeated_failed_logins)


class AuditLog:
    def __init__(
        self, db: Database, clock: Clock, bus: EventBus, *, failed_login_limit: int, failed_login_window: int
    ) -> None:
        self.db, self.clock, self.bus = db, clock, bus
        self.failed_login_limit, self.failed_login_window = failed_login_limit, failed_login_window

    async def record(
        self,
        *,
        actor: str,
        tenant_id: str | None,
        action: str,
        target: str | None = None,
        ip: str | None = None,
        outcome: str = "ok",
        details: dict[str, Any] | None = None,
    ) -> AuditRecord:
        entry = AuditRecord(
            tenant_id=tenant_id,
            actor=actor[:200],
            action=action[:100],
            target=target[:200] if target else None,
            ip=ip,
            outcome=outcome,
            details=_safe(details or {}),
            at=utc(self.clock.now()),
        )
        async with self.db.session() as session:
            for rule in RULES:
                reason = await rule(self, session, entry)
                if reason:
                    entry.flagged, entry.flag_reason = True, reason[:200]
                    break
            session.add(entry)
            await session.flush()
        if entry.flagged and tenant_id:
            await self.bus.publish(
                AuditFlagged(
                    tenant_id=tenant_id,
                    occurred_at=self.clock.now(),
                    audit_id=entry.id or 0,
                    action=entry.action,
                    actor=entry.actor,
                    reason=entry.flag_reason or "",
                    target=entry.target,
                )
            )
        return entry

    async def list(
        self, tenant_id: str, *, limit: int = 100, flagged: bool | None = None, action: str | None = None
    ) -> list[AuditRecord]:
        query = select(AuditRecord).where(AuditRecord.tenant_id == tenant_id)
        if flagged is not None:
            query = query.where(AuditRecord.flagged.is_(flagged))  # type: ignore[attr-defined]
        if action:
            query = query.where(AuditRecord.action == action)
        query = query.order_by(AuditRecord.at.desc(), AuditRecord.id.desc()).limit(limit)  # type: ignore[attr-defined,union-attr]
        async with self.db.session() as session:
            return list((await session.execute(query)).scalars())


_SECRET_WORDS = ("password", "secret", "token", "key")


def _safe(details: dict[str, Any]) -> dict[str, Any]:
    """Audit details never hold credentials: keys named like one are dropped."""
    return {
        k: v
        for k, v in details.items()
        if k in ("scopes", "key_id") or not any(word in k.lower() for word in _SECRET_WORDS)
    }
