"""The internal bridge: signed JSON-RPC 2.0 requests (single or batch) dispatched by ``jsonrpcserver``.

The signature is checked over the raw body before anything is parsed (signing.py). Each method then
checks the credential's scope and validates its params; the service's errors become JSON-RPC errors
with the error tree's codes (``AgentError.jsonrpc_code``: -32001 auth, -32003 scope, -32004 not
found, -32602 invalid params, ...) and ``data.code`` naming the case. Nothing unexpected leaks: an
internal failure is logged here and answered -32603 without its details.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from agent_server.capabilities.context import Principal
from agent_server.capabilities.registry import Registry
from agent_server.foundation.errors import AgentError, PermissionDenied, ValidationFailed
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.settings import Settings
from agent_server.gateway.service import Gateway
from agent_server.internal_rpc.methods import (
    BridgeMethods,
    KeyParam,
    NoParams,
    Params,
    TenantParam,
    ToolCall,
    UsageReport,
)
from agent_server.internal_rpc.signing import SignatureVerifier

if TYPE_CHECKING:
    from jsonrpcserver import Result

# Loaded once a deployment configures the bridge (build_internal_bridge), not in every worker.
jsonrpc = lazy_module("jsonrpcserver")

log = logging.getLogger("agentgate.internal_rpc")
Handler = Callable[[Principal, Any], Awaitable[dict[str, Any]]]
# A single request refused for these reasons gets the matching HTTP status; batches are always 200.
HTTP_STATUS = {-32700: 400, -32600: 400, -32003: 403}


class RpcAnswer(NamedTuple):
    status: int
    body: bytes  # empty for notifications only: 204


class InternalBridge:
    def __init__(self, verifier: SignatureVerifier, methods: BridgeMethods) -> None:
        self.verifier = verifier
        table: list[tuple[str, str, type[Params], Handler]] = [
            ("tools.list", "tools", NoParams, methods.tools_list),
            ("tools.call", "tools", ToolCall, methods.tools_call),
            ("keys.verify", "keys:verify", KeyParam, methods.keys_verify),
            ("usage.report", "usage:report", UsageReport, methods.usage_report),
            ("tenants.plan", "tenants:read", TenantParam, methods.tenants_plan),
        ]
        self.methods = {name: _method(name, scope, model, fn) for name, scope, model, fn in table}

    async def handle(self, key_id: str | None, signature: str | None, body: bytes) -> RpcAnswer:
        try:
            key = await self.verifier.verify(key_id, signature, body)
        except AgentError as err:
            log.warning("internal rpc refused: key=%s code=%s", (key_id or "-")[:64], err.code)
            return RpcAnswer(err.http_status, _dumps(_error(err)))
        try:
            text = body.decode()
        except UnicodeDecodeError:
            return RpcAnswer(400, _dumps(_error_body(-32700, "Parse error", "The body is not UTF-8.")))
        caller = Principal(subject=f"service:{key.id}", scopes=key.scopes)
        reply = await jsonrpc.async_dispatch_to_serializable(text, self.methods, context=caller)
        if reply is None:
            return RpcAnswer(204, b"")
        status = (
            HTTP_STATUS.get(reply["error"]["code"], 200)
            if isinstance(reply, dict) and "error" in reply
            else 200
        )
        return RpcAnswer(status, _dumps(reply))


def _method(name: str, scope: str, model: type[Params], fn: Handler) -> Callable[..., Awaitable[Result]]:
    """A ``jsonrpcserver`` method: named params only, scope first, then validation, then the call."""

    async def call(caller: Principal, **params: Any) -> Result:
        outcome = "ok"
        try:
            if scope not in caller.scopes:
                raise PermissionDenied(
                    f"The credential '{caller.subject}' lacks the scope '{scope}' for {name}."
                )
            try:
                valid = model.model_validate(params)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(part) for part in first["loc"]) or "params"
                raise ValidationFailed(
                    f"Invalid param '{field}' for {name}: {first['msg']}.", param=field
                ) from None
            return jsonrpc.Success(await fn(caller, valid))
        except AgentError as err:
            outcome = err.code
            raise jsonrpc.JsonRpcError(err.jsonrpc_code, err.message, _data(err)) from None
        except Exception:
            outcome = "crash"
            log.exception("internal rpc %s failed", name)
            raise jsonrpc.JsonRpcError(-32603, "Internal error") from None
        finally:
            log.info("internal rpc method=%s caller=%s outcome=%s", name, caller.subject, outcome)

    return call


def _data(err: AgentError) -> dict[str, Any]:
    return {"code": err.code, **({"param": err.param} if err.param is not None else {})}


def _error(err: AgentError) -> dict[str, Any]:
    return _error_body(err.jsonrpc_code, err.message, _data(err))


def _error_body(code: int, message: str, data: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": None}


def _dumps(reply: Any) -> bytes:
    return json.dumps(reply, ensure_ascii=False).encode()


def build_internal_bridge(settings: Settings, registry: Registry, gateway: Gateway) -> InternalBridge | None:
    """The bridge, or ``None`` when no service credential is configured (the route is then absent)."""
    if not settings.internal_rpc_keys:
        return None
    services = gateway.services
    verifier = SignatureVerifier(
        settings.internal_rpc_keys, services.kv, services.clock, settings.internal_rpc_tolerance_seconds
    )
    return InternalBridge(verifier, BridgeMethods(registry, gateway))
