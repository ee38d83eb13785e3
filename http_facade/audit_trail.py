"""The audit trail's middleware: it records every administration action after it is answered.

Every non-read request under ``/admin/`` becomes one entry (actor, tenant, action, target, ip, at,
outcome), whichever engineer's route served it: the actor comes from the route's dependency
(``request.state.admin_actor``) or, for routes that do not set it, from the bearer token itself.
Routes name their action with ``audit_note``; others get ``"<METHOD> <route template>"`` or a name
from ``KNOWN_ACTIONS``. Logins are recorded too, failed ones as ``auth.login_failed`` (which the
failed-login rule counts). Anonymous CSP reports are not admin actions and are not recorded. The
entries are read at ``GET /admin/audit`` (routes/admin_audit.py). It lives apart from the routes so
that every worker has it at start, while the administration routes are built at their first use.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.admin.audit import LOGIN_FAILED
from agent_server.admin.wiring import admin_services
from agent_server.foundation.errors import AgentError
from agent_server.gateway import repository as gateway_repo

log = logging.getLogger("agentgate.audit")
AUDIT_STATE = "audit"  # request.state.audit: what a route adds to its audit entry (admin_common.audit_note)
READS = frozenset({"GET", "HEAD", "OPTIONS"})
LOGIN_PATH = "/admin/auth/login"
UNRECORDED = ("/admin/csp-report/",)
BODY_PATHS = (LOGIN_PATH, "/admin/api-keys", "/admin/keys/rotate")  # bodies the entry needs a field of
MAX_CAPTURE = 8192
KNOWN_ACTIONS = {
    ("POST", "/admin/api-keys"): "api_key.create",
    ("DELETE", "/admin/api-keys/{key_id}"): "api_key.revoke",
    ("POST", "/admin/keys/rotate"): "api_key.rotate",
}


def _outcome(status: int) -> str:
    return "ok" if status < 400 else "denied" if status in (401, 403) else "failed"


class AuditMiddleware:
    def __init__(self, app: ASGIApp, routes_app: Any) -> None:
        self.app, self.routes_app = app, routes_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith("/admin/") or scope["method"] in READS or path in UNRECORDED:
            await self.app(scope, receive, send)
            return
        captured = bytearray()
        status = 500

        async def capturing_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request" and path in BODY_PATHS and len(captured) < MAX_CAPTURE:
                captured.extend(message.get("body", b"")[: MAX_CAPTURE - len(captured)])
            return message

        async def status_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, capturing_receive, status_send)
        finally:
            try:
                await self._record(scope, status, bytes(captured))
            except Exception:  # auditing must never turn an answered request into an error
                log.exception("audit entry for %s %s not recorded", scope["method"], path)

    async def _record(self, scope: Scope, status: int, raw: bytes) -> None:
        app = self.routes_app
        services = app.state.services
        state = scope.get("state") or {}
        note: dict[str, Any] = dict(state.get(AUDIT_STATE) or {})
        body = _json(raw)
        route = scope.get("route")
        template = getattr(route, "path_format", None) or scope["path"]
        method = scope["method"]
        params = scope.get("path_params") or {}
        actor, tenant_id = self._who(app, scope, state)
        # A sign-in without a token (passkey, reset link) names its user in the note.
        actor, tenant_id = note.get("actor", actor), note.get("tenant_id", tenant_id)
        if actor == "anonymous" and template != LOGIN_PATH:
            return  # no valid token: not an action of anyone, and no tenant could read the entry
        details: dict[str, Any] = {"status": status, **note.get("details", {})}
        if template == LOGIN_PATH:
            email = str(body.get("email", ""))[:200].strip().lower() or "unknown"
            user = await gateway_repo.find_user(services.db, email) if "@" in email else None
            actor, tenant_id = email, user.tenant_id if user else None
            note.setdefault("action", "auth.login" if status < 400 else LOGIN_FAILED)
        if isinstance(body.get("scopes"), list):
            details["scopes"] = [str(s) for s in body["scopes"]][:10]
        target = note.get("target") or body.get("key_id") or next(iter(params.values()), None)
        client = scope.get("client")
        await admin_services(services).audit.record(
            actor=actor,
            tenant_id=note.get("tenant_id", tenant_id),
            action=note.get("action") or KNOWN_ACTIONS.get((method, template)) or f"{method} {template}",
            target=str(target) if target else None,
            ip=client[0] if client else None,
            outcome=_outcome(status),
            details=details,
        )

    @staticmethod
    def _who(app: Any, scope: Scope, state: dict[str, Any]) -> tuple[str, str | None]:
        actor = state.get("admin_actor")
        if actor is not None:
            return actor.user_id, actor.tenant_id
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and token.strip():
                    try:
                        claims = app.state.gateway.tokens.verify(token.strip())
                    except AgentError:
                        return "anonymous", None
                    return claims.user_id, claims.tenant_id
        return "anonymous", None


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}
