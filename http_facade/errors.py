"""One renderer per envelope; the path decides which envelope a response uses."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from agent_server.errors import (
    AgentError,
    EndpointNotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    ValidationFailed,
    gateway_envelope,
    site_envelope,
)

log = logging.getLogger("agentgate.http")
JSON_UTF8 = "application/json; charset=utf-8"
# Routes of the tenant gateway speak the OpenAI-style envelope of spec 7.1; all others spec 7.2.
GATEWAY_PREFIXES = ("/v1/", "/v2/", "/admin/", "/agent/")


class EnvelopeResponse(JSONResponse):
    media_type = JSON_UTF8


def uses_gateway_envelope(path: str) -> bool:
    return path.startswith(GATEWAY_PREFIXES) or path in ("/v1", "/admin")


def render_error(err: AgentError, path: str, base_url: str = "") -> EnvelopeResponse:
    body = gateway_envelope(err) if uses_gateway_envelope(path) else site_envelope(err, base_url)
    return EnvelopeResponse(body, status_code=err.http_status, headers=err.headers)


def validation_error(errors: list[dict[str, Any]]) -> ValidationFailed:
    """The first problem of a request, named by its field (``body.messages.0.role``)."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": ""}
    if first.get("type") == "json_invalid":
        return ValidationFailed("The request body is not valid JSON.", code="invalid_json", param="body")
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


def install_error_handlers(app: FastAPI, base_url: str) -> None:

    async def on_agent_error(request: Request, exc: Exception) -> EnvelopeResponse:
        assert isinstance(exc, AgentError)
        return render_error(exc, request.url.path, base_url)

    async def on_validation(request: Request, exc: Exception) -> EnvelopeResponse:
        assert isinstance(exc, RequestValidationError)
        return render_error(validation_error(list(exc.errors())), request.url.path, base_url)

    async def on_http(request: Request, exc: Exception) -> EnvelopeResponse:
        assert isinstance(exc, StarletteHTTPException)
        err: AgentError
        if exc.status_code == 404:
            err = EndpointNotFound(f"No endpoint at {request.method} {request.url.path}.")
        elif exc.status_code == 405:
            err = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}.")
        elif exc.status_code == 413:
            err = PayloadTooLarge("The request body is too large.")
        else:
            err = AgentError(str(exc.detail), code="http_error")
            err.http_status = exc.status_code  # type: ignore[misc]
        return render_error(err, request.url.path, base_url)

    async def on_crash(request: Request, exc: Exception) -> EnvelopeResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return render_error(AgentError("Internal error; please retry later."), request.url.path, base_url)

    app.add_exception_handler(AgentError, on_agent_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)
