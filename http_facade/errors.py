"""One renderer per envelope; the path decides which envelope a response uses, and a browser on a URL
for people gets the error as a page (``respond``, docs/pages.md)."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from agent_server.foundation.errors import (
    AgentError,
    AuthFailed,
    Conflict,
    EndpointNotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    Unavailable,
    ValidationFailed,
    gateway_envelope,
    site_envelope,
)
from http_facade.deferred_routes import routes_serving
from http_facade.pages.error_page import error_page, wants_error_page
from wellknown.oauth import with_bearer_challenge

log = logging.getLogger("agentgate.http")
JSON_UTF8 = "application/json; charset=utf-8"
# Routes of the tenant gateway speak the OpenAI-style envelope of spec 7.1; all others spec 7.2.
GATEWAY_PREFIXES = ("/v1/", "/v2/", "/admin/", "/agent/")


class EnvelopeResponse(JSONResponse):
    media_type = JSON_UTF8


def add_gateway_prefix(prefix: str) -> None:
    """A route group whose segment is a setting (billing) answers in the gateway envelope too."""
    global GATEWAY_PREFIXES
    if prefix not in GATEWAY_PREFIXES:
        GATEWAY_PREFIXES = (*GATEWAY_PREFIXES, prefix)


def uses_gateway_envelope(path: str) -> bool:
    return path.startswith(GATEWAY_PREFIXES) or path in ("/v1", "/admin")


def render_error(err: AgentError, path: str, base_url: str = "") -> EnvelopeResponse:
    body = gateway_envelope(err) if uses_gateway_envelope(path) else site_envelope(err, base_url)
    headers = err.headers
    if err.http_status == 401:  # every 401 points to the protected-resource metadata (spec 5.6)
        headers = with_bearer_challenge(headers, base_url)
    return EnvelopeResponse(body, status_code=err.http_status, headers=headers)


def _body_problem(first: dict[str, Any]) -> ValidationFailed | None:
    """The whole body is wrong: not JSON, JSON sent without a JSON Content-Type, or not an object."""
    if first.get("type") == "json_invalid":
        return ValidationFailed("The request body is not valid JSON.", code="invalid_json", param="body")
    if tuple(first.get("loc", ())) != ("body",) or first.get("type") == "missing":
        return None
    raw = first.get("input")
    if isinstance(raw, bytes | bytearray):  # raw bytes: FastAPI parses JSON only with a JSON Content-Type
        try:
            json.loads(raw)
        except ValueError:
            return ValidationFailed("The request body is not valid JSON.", code="invalid_json", param="body")
        return ValidationFailed(
            "The request body must be JSON sent with 'Content-Type: application/json'.",
            code="invalid_content_type",
            param="body",
        )
    if not isinstance(raw, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(raw), "a number"
        )
        return ValidationFailed(f"The request body must be a JSON object, not {kind}.", param="body")
    return None


def validation_error(errors: list[dict[str, Any]]) -> ValidationFailed:
    """The first problem of a request, named by its field (``body.messages.0.role``)."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": ""}
    whole_body = _body_problem(first)
    if whole_body is not None:
        return whole_body
    loc = [str(part) for part in first.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header"):
        where, loc = loc[0], loc[1:]
    else:
        where = "body"
    field = ".".join(loc) or where
    if first.get("type") == "missing" and loc == [] and where == "body":
        return ValidationFailed("A JSON request body is required.", param="body")
    return ValidationFailed(
        f"Invalid {where} field '{field}': {first.get('msg', 'invalid value')}.", param=field
    )


def http_error(exc: StarletteHTTPException, method: str, path: str) -> AgentError:
    """A framework HTTPException as the error of the same status in our tree (headers kept)."""
    status, detail = exc.status_code, str(exc.detail)
    headers = dict(exc.headers or {})
    err: AgentError
    if status == 404:
        err = EndpointNotFound(f"No endpoint at {method} {path}.")
    elif status == 405:
        allowed = headers.get("Allow") or headers.get("allow")
        hint = f" Allowed: {allowed}." if allowed else ""
        err = MethodNotAllowed(f"{method} is not allowed on {path}.{hint}")
    elif status == 413:
        err = PayloadTooLarge("The request body is too large.")
    elif status == 400 and detail == _FASTAPI_BODY_ERROR:  # e.g. bytes that are no UTF-8/16/32 at all
        err = ValidationFailed("The request body is not valid JSON.", code="invalid_json", param="body")
    elif status in _BY_STATUS:
        err = _BY_STATUS[status](detail)
    else:
        err = AgentError(detail, code="http_error")
        err.http_status = status  # type: ignore[misc]
        if status < 500:  # a client error without a class of its own is still no server error
            err.type, err.gateway_type = "validation_error", "invalid_request_error"  # type: ignore[misc]
            err.retryable = False  # type: ignore[misc]
    err.headers.update(headers)
    return err


_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(app: Any, scope: Scope) -> str | None:
    """Every method the routes at this path serve, for a 405's ``Allow`` (RFC 9110 15.5.6).

    Starlette's 405 names only the methods of the first route whose path matched, while several
    routes (GET and POST of one resource, say) often share a path.
    """
    methods: set[str] = set()
    # The routes of included routers too; a deferred group is built only when it could serve the path.
    for route in iter_route_contexts(routes_serving(app, scope)):
        served = route.methods
        if served and route.matches(scope)[0] is not Match.NONE:
            methods |= served
    order = {method: n for n, method in enumerate(_METHOD_ORDER)}
    return ", ".join(sorted(methods, key=lambda m: (order.get(m, len(order)), m))) or None


def database_down(exc: BaseException) -> bool:
    """An error that says the database cannot be reached or used right now (connection refused or
    lost, pool exhausted, SQLite locked past its busy timeout), as opposed to a bug in a query."""
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.DisconnectionError):
        return True
    if isinstance(exc, sa_exc.TimeoutError):  # no pooled connection within pool_timeout
        return True
    return isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated


DATABASE_RETRY_AFTER = 5


def database_unavailable() -> Unavailable:
    return Unavailable("The database is unavailable; please retry shortly.", retry_after=DATABASE_RETRY_AFTER)


_FASTAPI_BODY_ERROR = "There was an error parsing the body"
_BY_STATUS: dict[int, type[AgentError]] = {
    400: ValidationFailed,
    401: AuthFailed,
    403: PermissionDenied,
    409: Conflict,
    429: RateLimited,
    503: Unavailable,
}


def respond(request: Request, err: AgentError, base_url: str) -> Response:
    """The error for this client: a page for a browser on a URL for people, else its envelope."""
    path = request.url.path
    if wants_error_page(request, uses_gateway_envelope(path)):
        try:
            return error_page(request, err)
        except Exception:  # a page that cannot be drawn must not hide the error itself
            log.exception("the error page for %s %s failed; answering JSON", request.method, path)
    return render_error(err, path, base_url)


def install_error_handlers(app: FastAPI, base_url: str) -> None:

    async def on_agent_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AgentError)
        return respond(request, exc, base_url)

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return respond(request, validation_error(list(exc.errors())), base_url)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 405 and (allow := allowed_methods(request.app, request.scope)):
            exc.headers = {**(exc.headers or {}), "Allow": allow}
        return respond(request, http_error(exc, request.method, request.url.path), base_url)

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return respond(request, AgentError("Internal error; please retry later."), base_url)

    async def on_database_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, sa_exc.DataError):
            # A value the database cannot store (a NUL character, a number out of its range): the
            # request's fault. Logged without the statement's parameters, which may hold secrets.
            log.info("database refused a value on %s %s: %s", request.method, request.url.path, exc.orig)
            refused = ValidationFailed(
                "A value in this request cannot be stored (for example a NUL character)."
            )
            return respond(request, refused, base_url)
        # A database outage is 503 with Retry-After (docs/operations.md), never a 500.
        if not database_down(exc):
            return await on_crash(request, exc)
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return respond(request, database_unavailable(), base_url)

    app.add_exception_handler(AgentError, on_agent_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)

    async def on_client_gone(request: Request, exc: Exception) -> Response:
        # The client closed the connection before its request body arrived (e.g. a load generator
        # stopping): not a server error, nothing to log, and nobody reads this answer.
        return Response(status_code=499)

    app.add_exception_handler(ClientDisconnect, on_client_gone)
    app.add_exception_handler(sa_exc.SQLAlchemyError, on_database_error)
    app.add_exception_handler(Exception, on_crash)
