"""``/openapi.json``: FastAPI's generated schema, completed into the service's real contract.

``build_openapi`` is pure: it takes the generated schema, the settings, the versions a client may
pin, the routes FastAPI does not describe (raw Starlette routes) and the envelope rule, and returns
a new document. It never edits the input. What it adds, generically, to every operation:

- FastAPI's 422 ``HTTPValidationError`` becomes a 400 in the envelope the path really uses;
- the error responses the middleware and handlers can produce (400, 410, 413, 500; 401, 403, 429
  where a credential is required; 404 where the path has parameters), each in its envelope;
- the optional ``API-Version`` request header and the ``API-Version`` response header (spec 9);
- the security schemes: API key as bearer or ``X-API-Key`` (``/v1``), admin JWT (``/admin``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agent_server.foundation.errors import DOCS_PATH
from agent_server.foundation.settings import Settings
from agent_server.policies.retry_guidance import RATE_LIMITED, SERVER_ERROR
from agent_server.policies.versions import POLICY_PATH
from wellknown.event_stream import SERVER_SENT_EVENT

LICENSE = {"name": "Business Source License 1.1", "identifier": "BUSL-1.1"}
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
BODY_METHODS = ("post", "put", "patch", "delete")
REF = "#/components/"
HEALTH_JSON = "application/health+json"
API_KEY = [{"apiKeyBearer": []}, {"apiKeyHeader": []}]
ADMIN_JWT = [{"adminJWT": []}]
ERROR_TEXT = {
    400: "Malformed request, invalid parameter or unsupported API-Version.",
    401: "Missing or invalid credential; see WWW-Authenticate.",
    403: "The credential lacks the scope or plan for this operation.",
    404: "No such resource.",
    409: "Conflicts with the current state, or an Idempotency-Key reused with another body.",
    410: "The pinned API-Version is retired; the body names its successor.",
    413: "The request body is too large.",
    429: f"Too many requests. {RATE_LIMITED}",
    500: f"Internal error. {SERVER_ERROR}",
}


@dataclass(frozen=True)
class RawRoute:
    """A route FastAPI does not describe: its path, methods and the operations to publish."""

    path: str
    methods: frozenset[str]
    summary: str = ""
    operations: dict[str, dict[str, Any]] | None = None


def _error_schemas() -> dict[str, Any]:
    param = {"type": ["string", "null"], "description": "The offending field or header, if any."}
    gateway = {
        "type": "object",
        "required": ["message", "type", "code"],
        "properties": {
            "message": {"type": "string"},
            "type": {"type": "string", "examples": ["invalid_request_error", "authentication_error"]},
            "code": {"type": "string", "examples": ["invalid_api_key", "model_not_found"]},
            "param": param,
        },
    }
    site = {
        "type": "object",
        "required": ["message", "type", "code"],
        "properties": {
            "message": {"type": "string"},
            "type": {"type": "string", "examples": ["validation_error", "not_found", "rate_limit"]},
            "code": {"type": "string", "examples": ["VALIDATION_ERROR", "ENDPOINT_NOT_FOUND"]},
            "param": param,
            "retry_after": {"type": "integer", "minimum": 0},
            "documentation_url": {"type": "string"},
        },
    }
    return {
        "GatewayError": {
            "title": "GatewayError",
            "description": "Gateway error envelope (spec 7.1), on /v1, /admin and /agent.",
            "type": "object",
            "required": ["error"],
            "properties": {"error": gateway},
        },
        "SiteError": {
            "title": "SiteError",
            "description": "Public-site error envelope (spec 7.2), on every other path.",
            "type": "object",
            "required": ["error"],
            "properties": {"error": site},
        },
    }


def _components(settings: Settings, versions: list[str]) -> dict[str, Any]:
    version_text = "The API version this response follows (spec 9)."
    return {
        "schemas": {**_error_schemas(), "ServerSentEvent": SERVER_SENT_EVENT},
        "securitySchemes": {
            "apiKeyBearer": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "API key (sk_live_… or sk_test_…)",
                "description": "Tenant API key as `Authorization: Bearer <API_KEY>`.",
            },
            "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "adminJWT": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": "Admin JWT from POST /admin/auth/login.",
            },
        },
        "parameters": {
            "ApiVersion": {
                "name": "API-Version",
                "in": "header",
                "required": False,
                "description": (
                    "Pin a dated API version; omit it for the current one. YYYY-MM-DD-preview "
                    f"versions are accepted too. Policy: {settings.public_base_url.rstrip('/')}{POLICY_PATH}"
                ),
                "schema": {"type": "string", "enum": versions},
            }
        },
        "headers": {
            "API-Version": {"description": version_text, "schema": {"type": "string"}},
            "Deprecation": {
                "description": "HTTP-date since which the pinned version is deprecated (spec 9).",
                "schema": {"type": "string"},
            },
            "Sunset": {
                "description": "RFC 8594 HTTP-date when a deprecated version retires.",
                "schema": {"type": "string"},
            },
        },
    }


def _envelope(gateway: bool) -> str:
    return f"{REF}schemas/{'GatewayError' if gateway else 'SiteError'}"


def _error_response(status: int, gateway: bool, description: str | None = None) -> dict[str, Any]:
    return {
        "description": description or ERROR_TEXT.get(status, "Error."),
        "content": {"application/json": {"schema": {"$ref": _envelope(gateway)}}},
    }


def _security_for(path: str, signed_in: bool) -> list[dict[str, list[str]]] | None:
    if path.startswith("/v1/") or path.startswith("/v2/"):
        return API_KEY
    return ADMIN_JWT if signed_in else None


def _complete_operation(
    path: str, method: str, op: dict[str, Any], gateway: bool, versioned: bool, signed_in: bool = False
) -> None:
    responses: dict[str, Any] = op.setdefault("responses", {})
    responses.pop("422", None)
    if op.get("security") is None and (security := _security_for(path, signed_in)) is not None:
        op["security"] = security
    # Spec 4: "unless stated, ... the error responses 400, 401, 403, 404, 500 use the error envelope".
    wanted = {400, 401, 403, 404, 500}
    if versioned:
        wanted.add(410)
    if method in BODY_METHODS:
        wanted |= {409, 413}  # 409: a conflicting state or a reused Idempotency-Key (spec 7.2)
    if op.get("security") or method in BODY_METHODS or path.startswith("/api/"):
        wanted.add(429)  # per-key plan limits, and the public site's per-IP limits (spec 8)
    for status in sorted(wanted):
        responses.setdefault(str(status), _error_response(status, gateway))
    created, ok = responses.get("201"), responses.get("200")
    if created is not None and "content" not in created and ok and "content" in ok:
        created["content"] = copy.deepcopy(ok["content"])  # "201 as well as 200", declared by status only
    for status, response in responses.items():
        if status[:1] in "45" and "content" not in response:  # a route declared the status only
            response["content"] = _error_response(400, gateway)["content"]
        if versioned and status.startswith("2"):
            response.setdefault("headers", {}).setdefault(
                "API-Version", {"$ref": f"{REF}headers/API-Version"}
            )
    if not versioned:  # the unversioned status routes speak the IETF health format (spec 4.5)
        ok = responses.get("200", {}).get("content", {})
        if "application/json" in ok:
            ok.setdefault(HEALTH_JSON, ok["application/json"])
    if versioned:
        params = op.setdefault("parameters", [])
        if not any(p.get("name", "").lower() == "api-version" for p in params if isinstance(p, dict)):
            params.append({"$ref": f"{REF}parameters/ApiVersion"})


def _unique_operation_ids(paths: dict[str, Any]) -> None:
    """FastAPI gives GET and HEAD of one ``api_route`` the same id; OpenAPI wants them unique."""
    seen: set[str] = set()
    for item in paths.values():
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            op_id = op["operationId"]
            if op_id in seen:
                stem = op_id.rsplit("_", 1)[0] if op_id.endswith(("_get", "_post")) else op_id
                op_id = f"{stem}_{method}"
                while op_id in seen:
                    op_id += "_"
                op["operationId"] = op_id
            seen.add(op_id)


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def _drop_unused_validation_schemas(doc: dict[str, Any]) -> None:
    """FastAPI's 422 models go once no operation refers to them any more."""
    schemas = doc.get("components", {}).get("schemas", {})
    used = _refs(doc.get("paths", {}))
    if f"{REF}schemas/HTTPValidationError" not in used:
        schemas.pop("HTTPValidationError", None)
        others = {k: v for k, v in schemas.items() if k != "ValidationError"}
        if f"{REF}schemas/ValidationError" not in used | _refs(others):
            schemas.pop("ValidationError", None)


def build_openapi(
    generated: dict[str, Any],
    settings: Settings,
    *,
    current_version: str,
    versions: list[str],
    raw_routes: Iterable[RawRoute] = (),
    uses_gateway_envelope: Callable[[str], bool],
    unversioned: frozenset[str] = frozenset(),
    signed_in: frozenset[tuple[str, str]] = frozenset(),
) -> dict[str, Any]:
    """The published OpenAPI 3.1 document (spec 1): ``generated`` is FastAPI's own schema;
    ``signed_in`` the (path, method) pairs whose route asks for the admin JWT (from its dependencies)."""
    doc = copy.deepcopy(generated)
    base = settings.public_base_url.rstrip("/")
    doc["openapi"] = "3.1.0"
    info = doc.setdefault("info", {})
    info["version"] = current_version
    info["license"] = dict(LICENSE)
    info.setdefault(
        "description",
        f"Agents start at {base}/AGENTS.md. Errors: {base}{DOCS_PATH}. Versioning: {base}{POLICY_PATH}.",
    )
    doc["servers"] = [{"url": base}]
    paths: dict[str, Any] = doc.setdefault("paths", {})
    for raw in raw_routes:
        item = paths.setdefault(raw.path, {})
        for method, op in (raw.operations or {}).items():
            item.setdefault(method, copy.deepcopy(op))
        for method in sorted(m.lower() for m in raw.methods):
            if method != "head" and method not in item:
                item[method] = {
                    "summary": raw.summary or f"{method.upper()} {raw.path}",
                    "operationId": f"{raw.path.strip('/').replace('/', '_').replace('.', '_')}_{method}",
                    "responses": {"200": {"description": "Successful response."}},
                }
    components = doc.setdefault("components", {})
    for key, values in _components(settings, versions).items():
        components.setdefault(key, {}).update(values)
    _unique_operation_ids(paths)
    for path, item in paths.items():
        gateway = uses_gateway_envelope(path)
        versioned = path not in unversioned
        for method in METHODS:
            if method in item:
                needs_jwt = (path, method) in signed_in
                _complete_operation(path, method, item[method], gateway, versioned, needs_jwt)
    _drop_unused_validation_schemas(doc)
    return doc
