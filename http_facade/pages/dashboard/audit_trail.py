"""Audit entries for what people do in the dashboard, as the ``/admin`` middleware records them.

The audit middleware sees ``/admin/`` paths only; a dashboard form calls the same services without
passing there, so it records its own entry: the same action names (``api_key.create``, ...), the
same outcomes (ok, denied, failed) and details, so the audit rules (an admin-scoped key, repeated
failed sign-ins) flag them alike.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.requests import Request

from agent_server.admin.wiring import admin_services
from agent_server.foundation.errors import AgentError
from http_facade.deps import client_ip

log = logging.getLogger("agentgate.audit")


def _outcome(status: int) -> str:
    return "ok" if status < 400 else "denied" if status in (401, 403) else "failed"


async def record(
    request: Request,
    *,
    actor: str,
    tenant_id: str | None,
    action: str,
    status: int = 200,
    target: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """One entry; a failure to record is logged and never fails the page."""
    try:
        await admin_services(request.app.state.services).audit.record(
            actor=actor,
            tenant_id=tenant_id,
            action=action,
            target=target,
            ip=client_ip(request),
            outcome=_outcome(status),
            details={"status": status, "via": "dashboard", **(details or {})},
        )
    except Exception:  # auditing must never turn an answered request into an error
        log.exception("audit entry for %s not recorded", action)


@asynccontextmanager
async def audited(
    request: Request, actor: str, tenant_id: str, action: str, **note: Any
) -> AsyncIterator[dict[str, Any]]:
    """Record ``action`` once the block ends, with its outcome; the block may set ``target`` and
    ``details`` in the yielded note."""
    entry: dict[str, Any] = {"target": note.get("target"), "details": dict(note.get("details") or {})}
    status = 500
    try:
        yield entry
        status = 200
    except AgentError as err:
        status = err.http_status
        raise
    finally:
        await record(
            request,
            actor=actor,
            tenant_id=tenant_id,
            action=action,
            status=status,
            target=entry["target"],
            details=entry["details"],
        )
