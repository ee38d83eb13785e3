"""The edge: one pure-ASGI middleware for what every HTTP request passes through.

In order, outermost first: CORS (Starlette's ``CORSMiddleware``, engaged only for requests that
carry an ``Origin``), the request id (``X-Request-Id``, docs/operations.md) with the access log and,
when traces are on, the request's span, request metrics, the ``API-Version`` header (spec 9) and
the request-body limit. They were four middlewares; as one, a response message passes one ``send``
wrapper instead of four and the request headers are scanned once (docs/performance.md measures the
difference).
"""

from __future__ import annotations

import logging
import time

from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import PayloadTooLarge
from agent_server.foundation.request_context import REQUEST_ID, accepted_request_id, new_request_id
from agent_server.mcp.versions import MCP_PROTOCOL_VERSION
from agent_server.observability import telemetry
from agent_server.observability.logging_setup import ACCESS_LOGGER
from agent_server.observability.metrics import Metrics
from agent_server.policies.versions import VersionRegistry
from http_facade.errors import render_error
from http_facade.metrics import route_template
from http_facade.versioning import SELF_VERSIONED_PREFIXES, UNVERSIONED, cors_options
from wellknown.mcp import MCP_PATH

Headers = tuple[tuple[bytes, bytes], ...]
API_VERSION = b"api-version"
# Without an Origin, CORSMiddleware is skipped; this is what it would have added (caches must key
# a response on Origin, or a cached answer without CORS headers would be served to a browser).
VARY_ORIGIN = (b"vary", b"Origin")
NO_BODY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Uploads streamed to a store, each counted against its own limit (the plan's max_file_bytes).
STREAMED_UPLOADS = frozenset({"/v1/files"})
MODEL_KEY = "model"  # routes set request.state.model for the metrics series
ADMIN_PREFIX = "/admin/"
NO_STORE = (b"cache-control", b"no-store")
REQUEST_ID_HEADER = b"x-request-id"
access_log = logging.getLogger(ACCESS_LOGGER)


class Edge:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Metrics,
        routes_app: object,
        versions: VersionRegistry,
        clock: Clock,
        base_url: str,
        body_limit: int,
        allowed_origins: list[str],
    ) -> None:
        # routes_app is the FastAPI app: metrics read its routes at call time (routers land late).
        self.app, self.metrics, self.routes_app = app, metrics, routes_app
        self.versions, self.clock, self.base_url, self.limit = versions, clock, base_url, body_limit
        self.cors = CORSMiddleware(self._serve, **cors_options(allowed_origins))  # type: ignore[arg-type]
        self.current = versions.current.name.encode()
        self._current_header = (API_VERSION, self.current)
        # Read once: the app is built after logging is configured (AGENTGATE_ACCESS_LOG).
        self.access_log = access_log.isEnabledFor(logging.INFO)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, _ in scope["headers"]:
            if name == b"origin":
                await self.cors(scope, receive, send)
                return
        await self._serve(scope, receive, send, (VARY_ORIGIN,))

    async def _serve(self, scope: Scope, receive: Receive, send: Send, extra: Headers = ()) -> None:
        started = time.perf_counter()
        requested = length = request_id = None
        for name, value in scope["headers"]:
            if name == API_VERSION:
                requested = value
            elif name == b"content-length":
                length = value
            elif name == REQUEST_ID_HEADER:
                request_id = accepted_request_id(value)
        span = span_token = None
        if telemetry.tracer is not None:
            span, span_token = telemetry.start_request_span(scope)
            request_id = request_id or telemetry.trace_id_of(span)  # one id to search logs and traces
        if request_id is None:
            request_id = new_request_id()
        request_token = REQUEST_ID.set(request_id)  # every log line of the request carries it
        extra = (*extra, (REQUEST_ID_HEADER, request_id.encode()))
        refusal = None
        if scope["path"] in UNVERSIONED or scope["path"].startswith(SELF_VERSIONED_PREFIXES):
            pass
        elif requested is None or requested == self.current:
            extra = (*extra, self._current_header)
        else:
            resolution = self.versions.resolve(requested.decode("latin-1"), self.clock.now(), self.base_url)
            extra = (
                *extra,
                (API_VERSION, resolution.version.encode()),
                *((k.lower().encode(), v.encode("latin-1")) for k, v in resolution.headers),
            )
            if resolution.error is not None:
                refusal = render_error(resolution.error, scope["path"], self.base_url)
            else:
                scope.setdefault("state", {})["api_version"] = resolution.version
        counting = (
            refusal is None
            and scope["method"] not in NO_BODY_METHODS
            and scope["path"] not in STREAMED_UPLOADS
        )
        if counting and length is not None and length.isdigit():
            # The server frames the body by Content-Length, so a declared length within the limit
            # needs no counting; a chunked body (no length) is counted as it streams in.
            if int(length) > self.limit:
                refusal = self._too_large(scope)
            counting = False

        observed = exceeded = False
        received, status = 0, 500  # 500: no answer started (the server's last-resort handler)
        admin = scope["path"].startswith(ADMIN_PREFIX)

        async def edge_send(message: Message) -> None:
            nonlocal observed, status
            if exceeded:
                # The app caught the failing body read and answered it itself (FastAPI: a 400
                # "error parsing the body"); that answer is dropped for the 413 below.
                return
            if message["type"] == "http.response.start":
                if not observed:
                    observed, status = True, message["status"]
                    self._observe(scope, status, started)
                _add_headers(message, extra)
                if admin:
                    _store_nothing(message)
            await send(message)

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise _TooLarge
            return message

        try:
            try:
                if refusal is not None:
                    await refusal(scope, receive, edge_send)
                else:
                    await self.app(scope, counted_receive if counting else receive, edge_send)
            except Exception:
                if not exceeded:
                    if not observed:  # the server's last-resort handler answers 500
                        observed = True
                        self._observe(scope, 500, started)
                    raise
            if exceeded and not observed:
                exceeded = False
                await self._too_large(scope)(scope, receive, edge_send)
        finally:
            if self.access_log:
                self._log_access(scope, status, started)
            if span is not None:
                route = route_template(scope, status, self.routes_app)
                telemetry.end_request_span(span, span_token, scope["method"], status, route, request_id)
            REQUEST_ID.reset(request_token)

    def _log_access(self, scope: Scope, status: int, started: float) -> None:
        """Our access line, at the response's end (a stream's too): the request id comes with it."""
        milliseconds = round((time.perf_counter() - started) * 1000, 3)
        client = scope.get("client")
        fields = {
            "method": scope["method"],
            "path": scope["path"],  # without the query string: it may carry what logs must not
            "status": status,
            "duration_ms": milliseconds,
            "client": client[0] if client else None,
        }
        access_log.info(
            "%s %s %d %.1fms", scope["method"], scope["path"], status, milliseconds, extra={"fields": fields}
        )

    def _observe(self, scope: Scope, status: int, started: float) -> None:
        state = scope.get("state")
        model = state.get(MODEL_KEY) if state else None
        template = route_template(scope, status, self.routes_app)
        seconds = time.perf_counter() - started
        self.metrics.observe(
            scope["method"], template, model if isinstance(model, str) else None, status, seconds
        )

    def _too_large(self, scope: Scope) -> Response:
        err = PayloadTooLarge(f"The request body is larger than {self.limit} bytes.")
        path = scope.get("path", "")
        if path.rstrip("/") == MCP_PATH:  # every answer of the tool-protocol endpoint names its version
            err.headers["MCP-Version"] = MCP_PROTOCOL_VERSION
        return render_error(err, path, self.base_url)


def _store_nothing(message: Message) -> None:
    """``Cache-Control: no-store`` on every /admin answer (tokens, keys, secrets, tenant data):
    set here once rather than by each route, replacing whatever a route set."""
    headers = [h for h in message.get("headers") or () if h[0].lower() != b"cache-control"]
    headers.append(NO_STORE)
    message["headers"] = headers


def _add_headers(message: Message, extra: Headers) -> None:
    if not extra:
        return
    headers = message.get("headers")
    if not isinstance(headers, list):  # Starlette sends its own list, so this is rare
        headers = message["headers"] = list(headers or ())
    for name, _ in headers:
        if name == API_VERSION:  # a route that set its own API-Version keeps it
            headers.extend(h for h in extra if h[0] != API_VERSION)
            return
    headers.extend(extra)


class _TooLarge(Exception):
    pass
