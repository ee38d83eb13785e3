"""The one error tree. Each error knows how every surface presents it.

    AgentError (500 server_error, retryable)
    ├── ValidationFailed        400 validation_error      -32602
    │   ├── ModelNotFound       400 model_not_found (param model)
    │   └── UnsupportedVersion  400 unsupported_version
    ├── AuthFailed              401 auth_error / invalid_api_key
    │   └── ExpiredToken        401 expired_token
    ├── PaymentRequired         402 byok_provider_missing
    │   └── QuotaExceeded       402 insufficient_quota / quota_exceeded
    ├── PermissionDenied        403 permission_error / insufficient_scope
    │   └── PlanLimitExceeded   403 plan_limit_exceeded
    ├── NotFound                404 not_found
    │   └── EndpointNotFound    404 endpoint_not_found
    ├── MethodNotAllowed        405 method_not_allowed
    ├── Conflict                409 conflict
    │   └── IdempotencyConflict 409 idempotency_conflict
    ├── VersionGone             410 version_gone
    ├── PayloadTooLarge         413 payload_too_large
    ├── RateLimited             429 rate_limit (code rate_limit_exceeded, retry_after)
    ├── NotImplementedYet       501 not_implemented
    ├── UpstreamFailed          502 upstream_error, retryable
    ├── Unavailable             503 service_unavailable, retryable (retry_after)
    └── TimedOut                504 timeout, retryable

The public-site envelope (spec 7.2) shows ``type`` and ``code`` upper-cased; the gateway
envelope (spec 7.1) shows ``gateway_type`` and ``code`` as is; MCP shows ``jsonrpc_code``
for protocol errors and an ``isError`` result for tool failures.

Outside the tree, ``DeploymentError`` stops a process at start; no surface presents it.
"""

from __future__ import annotations

from typing import Any, ClassVar

DOCS_PATH = "/docs/errors"


class AgentError(Exception):
    """Base of every error the service reports on purpose."""

    http_status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"
    gateway_type: ClassVar[str] = "server_error"
    default_code: ClassVar[str] = "server_error"
    jsonrpc_code: ClassVar[int] = -32603
    retryable: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.param = param
        self.retry_after = retry_after
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})
        if retry_after is not None:
            self.headers.setdefault("Retry-After", str(retry_after))


class ValidationFailed(AgentError):
    http_status, type, gateway_type, default_code = (
        400,
        "validation_error",
        "invalid_request_error",
        "validation_error",
    )
    jsonrpc_code, retryable = -32602, False


class ModelNotFound(ValidationFailed):
    default_code = "model_not_found"


class UnsupportedVersion(ValidationFailed):
    default_code = "unsupported_version"


class AuthFailed(AgentError):
    http_status, type, gateway_type, default_code = (
        401,
        "auth_error",
        "authentication_error",
        "invalid_api_key",
    )
    jsonrpc_code, retryable = -32001, False


class ExpiredToken(AuthFailed):
    default_code = "expired_token"


class PaymentRequired(AgentError):
    http_status, type, gateway_type, default_code = (
        402,
        "byok_provider_missing",
        "billing_error",
        "byok_provider_missing",
    )
    jsonrpc_code, retryable = -32002, False


class QuotaExceeded(PaymentRequired):
    """The tenant's monthly token quota is spent (gateway): not retryable until the month renews."""

    type, gateway_type, default_code = "quota_exceeded", "insufficient_quota", "quota_exceeded"


class PermissionDenied(AgentError):
    http_status, type, gateway_type, default_code = (
        403,
        "permission_error",
        "permission_error",
        "insufficient_scope",
    )
    jsonrpc_code, retryable = -32003, False


class PlanLimitExceeded(PermissionDenied):
    default_code = "plan_limit_exceeded"


class NotFound(AgentError):
    http_status, type, gateway_type, default_code = 404, "not_found", "not_found_error", "not_found"
    jsonrpc_code, retryable = -32004, False


class EndpointNotFound(NotFound):
    default_code = "endpoint_not_found"


class MethodNotAllowed(AgentError):
    http_status, type, gateway_type, default_code = (
        405,
        "validation_error",
        "invalid_request_error",
        "method_not_allowed",
    )
    jsonrpc_code, retryable = -32601, False


class Conflict(AgentError):
    http_status, type, gateway_type, default_code = 409, "conflict", "conflict_error", "conflict"
    jsonrpc_code, retryable = -32009, False


class IdempotencyConflict(Conflict):
    type, default_code = "idempotency_conflict", "idempotency_conflict"


class VersionGone(AgentError):
    http_status, type, gateway_type, default_code = (
        410,
        "version_gone",
        "invalid_request_error",
        "version_gone",
    )
    jsonrpc_code, retryable = -32010, False


class PayloadTooLarge(AgentError):
    http_status, type, gateway_type, default_code = (
        413,
        "validation_error",
        "invalid_request_error",
        "payload_too_large",
    )
    jsonrpc_code, retryable = -32600, False


class RateLimited(AgentError):
    http_status, type, gateway_type, default_code = (
        429,
        "rate_limit",
        "rate_limit_error",
        "rate_limit_exceeded",
    )
    jsonrpc_code, retryable = -32029, True


class NotImplementedYet(AgentError):
    http_status, type, gateway_type, default_code = 501, "server_error", "server_error", "not_implemented"
    jsonrpc_code, retryable = -32601, False


class UpstreamFailed(AgentError):
    http_status, type, gateway_type, default_code = 502, "server_error", "server_error", "upstream_error"


class Unavailable(AgentError):
    http_status, type, gateway_type, default_code = 503, "server_error", "server_error", "service_unavailable"


class DeploymentError(RuntimeError):
    """The configuration cannot run safely as asked; the message says what to set.

    Raised at start by the deployment checks (agent_server/deployment/checks.py) and by the features'
    own configuration checks they call (mail, billing), so it lives below all of them."""


class TimedOut(AgentError):
    http_status, type, gateway_type, default_code = 504, "server_error", "server_error", "timeout"


def site_envelope(err: AgentError, base_url: str = "") -> dict[str, Any]:
    """Spec 7.2: ``{error: {message, type, code, param?, retry_after?, documentation_url}}``."""
    body: dict[str, Any] = {
        "message": err.message,
        "type": err.type,
        "code": err.code.upper(),
        "documentation_url": f"{base_url}{DOCS_PATH}#{err.code}",
    }
    if err.param is not None:
        body["param"] = err.param
    if err.retry_after is not None:
        body["retry_after"] = err.retry_after
    body.update(err.extra)
    return {"error": body}


def gateway_envelope(err: AgentError) -> dict[str, Any]:
    """Spec 7.1: ``{error: {type, message, code, param?}}`` (the OpenAI wire shape)."""
    body: dict[str, Any] = {
        "message": err.message,
        "type": err.gateway_type,
        "code": err.code,
        "param": err.param,
    }
    body.update(err.extra)
    return {"error": body}
