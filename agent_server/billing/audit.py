"""Audit entries of billing, written in the transaction of the change they record.

The audit log's own ``AuditLog.record`` opens a session of its own; billing's changes (an applied
provider event, a time-driven refusal) and their entries must commit together, so they build the
row here and add it to their session. Billing entries are never flagged (no rule concerns them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agent_server.admin.tables import AuditRecord


def audit_entry(
    tenant_id: str | None,
    action: str,
    at: datetime,
    *,
    actor: str = "billing",
    target: str | None = None,
    details: dict[str, Any] | None = None,
    outcome: str = "ok",
) -> AuditRecord:
    return AuditRecord(
        tenant_id=tenant_id,
        actor=actor[:200],
        action=action[:100],
        target=target[:200] if target else None,
        outcome=outcome,
        details=details or {},
        at=at,
    )
