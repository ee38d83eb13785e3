"""One ACP call, whatever the transport (REST routes and MCP tools both come here): the version,
the request signature, the body checked against the spec's JSON Schema, Idempotency-Key, then the
operation. Errors leave as ACP ``Error`` objects (``acp_error``), never the project's envelope.

Idempotency (RFC agentic_checkout §6): keys are scoped to platform + operation + session; the same
key and body replay the stored answer (4xx included, 5xx never); another body is 422
``idempotency_conflict``; a duplicate of a request still running is 409 ``idempotency_in_flight``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from agent_server.commerce.platforms import Platforms
from agent_server.commerce.sessions import CheckoutSessions
from agent_server.commerce.tables import AgentPlatform
from agent_server.commerce.view import ACP_VERSION
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError, AuthFailed, IdempotencyConflict, ValidationFailed
from agent_server.foundation.lazy import lazy_module
from agent_server.policies.idempotency import IdempotencyStore, StoredResponse, body_digest

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

jsonschema = lazy_module("jsonschema")  # loaded by the first ACP request checked against the spec

SUPPORTED_VERSIONS = (ACP_VERSION,)
SIGNATURE_TOLERANCE = 300  # seconds between the request's Timestamp and now
REQUESTS = {  # operation: (request schema in the bundle, success status)
    "create": ("CheckoutSessionCreateRequest", 201),
    "get": (None, 200),
    "update": ("CheckoutSessionUpdateRequest", 200),
    "complete": ("CheckoutSessionCompleteRequest", 200),
    "cancel": ("CancelSessionRequest", 200),
}


@dataclass(frozen=True)
class Meta:
    """The protocol headers (REST) or ``meta`` fields (MCP) of one call."""

    api_version: str | None
    idempotency_key: str | None = None
    request_id: str | None = None
    signature: str | None = None
    timestamp: str | None = None


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]
    replayed: bool = False
    headers: dict[str, str] = field(default_factory=dict)  # Retry-After of a busy session


@cache
def bundle() -> dict[str, Any]:
    text = resources.files("agent_server.commerce").joinpath("acp_schema/schema.agentic_checkout.json")
    return json.loads(text.read_text(encoding="utf-8"))


@cache
def validator(name: str) -> Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": bundle()["$defs"]})


def acp_error(exc: AgentError) -> Answer:
    """The spec's flat ``Error`` for one of our errors, with its HTTP status."""
    status, code = exc.http_status, exc.code
    if isinstance(exc, IdempotencyConflict):
        status, code = 422, "idempotency_conflict"
    elif code == "idempotency_in_progress":
        code = "idempotency_in_flight"
    kind = (
        "invalid_request" if status < 500 else "service_unavailable" if status == 503 else "processing_error"
    )
    body = {"type": kind, "code": code, "message": exc.message}
    if exc.param:
        body["param"] = exc.param
    return Answer(status, body, headers={k: v for k, v in exc.headers.items() if k == "Retry-After"})


def checked_body(operation: str, body: Any) -> dict[str, Any]:
    """The body as the spec's schema allows it. Top-level fields the schema does not know are ignored
    (the spec's own examples send some, e.g. ``order_notes``); everything else must validate."""
    name = REQUESTS[operation][0]
    if name is None:
        return {}
    if body is None and operation == "cancel":
        body = {}
    if not isinstance(body, dict):
        raise ValidationFailed("The request body must be a JSON object.", code="invalid", param="$")
    known = bundle()["$defs"][name].get("properties", {})
    body = {key: value for key, value in body.items() if key in known}
    error = next(iter(sorted(validator(name).iter_errors(body), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise ValidationFailed(f"{where}: {error.message}", code="invalid", param=where)
    return body


def canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class AcpProtocol:
    def __init__(
        self, platforms: Platforms, sessions: CheckoutSessions, idempotency: IdempotencyStore, clock: Clock
    ) -> None:
        self.platforms, self.sessions, self.idempotency, self.clock = platforms, sessions, idempotency, clock

    async def call(
        self,
        platform: AgentPlatform,
        operation: str,
        meta: Meta,
        session_id: str | None,
        body: Any,
        *,
        key_required: bool,
    ) -> Answer:
        try:
            self._check_version(meta)
            self._check_signature(platform, meta, body)
            checked = checked_body(operation, body)
            if operation == "get":
                return Answer(200, await self._run(platform, operation, session_id, checked))
            return await self._idempotent(platform, operation, meta, session_id, checked, key_required)
        except AgentError as exc:
            return acp_error(exc)

    async def _idempotent(
        self,
        platform: AgentPlatform,
        operation: str,
        meta: Meta,
        session_id: str | None,
        body: dict[str, Any],
        key_required: bool,
    ) -> Answer:
        key = meta.idempotency_key
        if key is None:
            if key_required:
                raise ValidationFailed(
                    "Idempotency-Key header is required on all POST requests.",
                    code="idempotency_key_required",
                    param="Idempotency-Key",
                )
            return Answer(REQUESTS[operation][1], await self._run(platform, operation, session_id, body))
        if not 1 <= len(key) <= 255:
            raise ValidationFailed("Idempotency-Key has 1 to 255 characters.", param="Idempotency-Key")
        digest = hashlib.sha256(key.encode()).hexdigest()
        scope = f"acp:{platform.id}:{operation}:{session_id or ''}:{digest}"
        stored = await self.idempotency.claim(scope, body_digest(canonical(body)))
        if stored is not None:
            return Answer(stored.status_code, json.loads(stored.body), replayed=True)
        try:
            answer = Answer(REQUESTS[operation][1], await self._run(platform, operation, session_id, body))
        except AgentError as exc:
            answer = acp_error(exc)
        except BaseException:
            await self.idempotency.release(scope)
            raise
        if answer.status < 500:
            await self.idempotency.complete(
                scope, StoredResponse(answer.status, json.dumps(answer.body), "application/json")
            )
        else:
            await self.idempotency.release(scope)
        return answer

    async def _run(
        self, platform: AgentPlatform, operation: str, session_id: str | None, body: dict[str, Any]
    ) -> dict[str, Any]:
        sessions = self.sessions
        if operation == "create":
            return await sessions.create(platform.id, body)
        assert session_id is not None
        if operation == "get":
            return await sessions.get(platform.id, session_id)
        handler = {"update": sessions.update, "complete": sessions.complete, "cancel": sessions.cancel}
        return await handler[operation](platform.id, session_id, body)

    @staticmethod
    def _check_version(meta: Meta) -> None:
        supported = ", ".join(SUPPORTED_VERSIONS)
        if not meta.api_version:
            raise ValidationFailed(
                f"Send the API-Version header; supported versions: {supported}.",
                code="missing_api_version",
                param="API-Version",
            )
        if meta.api_version not in SUPPORTED_VERSIONS:
            raise ValidationFailed(
                f"API-Version {meta.api_version} is not supported; supported versions: {supported}.",
                code="unsupported_api_version",
                param="API-Version",
            )

    def _check_signature(self, platform: AgentPlatform, meta: Meta, body: Any) -> None:
        """Optional (RECOMMENDED by the spec): when sent, ``Signature`` is base64url HMAC-SHA256 with
        the platform's signing secret over ``Timestamp + "." + canonical JSON body``."""
        if meta.signature is None:
            return
        if not meta.timestamp:
            raise AuthFailed("A signed request needs its Timestamp header.", code="invalid_signature")
        try:
            sent = datetime.fromisoformat(meta.timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise AuthFailed("Timestamp is not an RFC 3339 time.", code="invalid_signature") from None
        if abs(self.clock.now() - sent) > SIGNATURE_TOLERANCE:
            raise AuthFailed(
                "The request's Timestamp is outside the allowed window.", code="invalid_signature"
            )
        secret = self.platforms.signing_secret(platform).encode()
        signed = meta.timestamp.encode() + b"." + canonical(body if body is not None else {})
        expected = base64.urlsafe_b64encode(hmac.new(secret, signed, hashlib.sha256).digest()).rstrip(b"=")
        if not hmac.compare_digest(expected.decode(), meta.signature.strip().rstrip("=")):
            raise AuthFailed("The request Signature does not match.", code="invalid_signature")


def inlined(name: str) -> dict[str, Any]:
    """A definition of the bundle with every ``$ref`` replaced by its target, for schemas served
    alone (MCP tool schemas must be self-contained, docs/mcp-binding.md)."""
    definitions = bundle()["$defs"]

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = ref.removeprefix("#/$defs/")
                if target in seen:  # a cycle: leave it open rather than recurse for ever
                    return {"type": "object"}
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return {**resolve(definitions[target], (*seen, target)), **resolve(rest, seen)}
            return {k: resolve(v, seen) for k, v in node.items() if k not in ("example", "examples")}
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        return node

    return resolve(definitions[name], (name,))
