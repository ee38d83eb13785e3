"""Traces, opt-in: OpenTelemetry spans for each HTTP request, each upstream LLM call
(``agent_server/llm/upstream_telemetry.py``) and each database statement a request runs, exported over
OTLP to the collector the standard ``OTEL_*`` variables name (docs/operations.md).

Off (the default: no ``OTEL_EXPORTER_OTLP_ENDPOINT``), nothing of the SDK is imported and
``tracer`` is None; the edge and the upstream client test that one global per request and do
nothing else. On, the SDK reads its own variables (endpoint, headers, timeout, compression,
sampler, batch sizes, resource attributes) and exports from its batch thread.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agent_server.foundation.settings import Settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer
    from sqlalchemy.engine import Engine

log = logging.getLogger("agentgate.telemetry")
TRACER_NAME = "agentgate"
SPAN_KEY = "_agentgate_span"  # on a statement's execution context, from its start to its end

tracer: Tracer | None = None
api: OtelApi | None = None  # set with tracer
_provider: TracerProvider | None = None
_engines: list[Engine] = []


class OtelApi:
    """The OpenTelemetry API calls spans need, bound once when traces start (an import statement
    inside a per-request function costs more than the call)."""

    def __init__(self) -> None:
        from opentelemetry import context, propagate, trace

        self.attach, self.detach, self.extract = context.attach, context.detach, propagate.extract
        self.current_span, self.in_context = trace.get_current_span, trace.set_span_in_context
        self.SERVER, self.CLIENT = trace.SpanKind.SERVER, trace.SpanKind.CLIENT
        self.ERROR = trace.Status(trace.StatusCode.ERROR)

    def failed(self, span: Span, error: BaseException) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, type(error).__name__))


def start_tracing(settings: Settings, engine: Engine | None = None) -> bool:
    """Start exporting when the settings ask for it; True when this call started it."""
    global tracer, api, _provider
    if not settings.tracing or tracer is not None:
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = _exporter(settings.otel_traces_protocol)
    except ImportError as exc:
        log.warning(
            "traces are configured but the otel extra is missing (%s): pip install 'agentgate[otel]'", exc
        )
        return False
    resource = Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": settings.service_name}))
    provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _provider, api, tracer = provider, OtelApi(), provider.get_tracer(TRACER_NAME)
    if engine is not None:
        from sqlalchemy import event

        for name, listener in _DB_LISTENERS.items():
            event.listen(engine, name, listener)
        _engines.append(engine)
    log.info("traces exported over OTLP (%s)", settings.otel_traces_protocol)
    return True


def stop_tracing() -> None:
    """Export what is pending and stop (the app's shutdown)."""
    global tracer, api, _provider
    provider, tracer, api, _provider = _provider, None, None, None
    while _engines:
        from sqlalchemy import event

        engine = _engines.pop()
        for name, listener in _DB_LISTENERS.items():
            event.remove(engine, name, listener)
    if provider is not None:
        provider.shutdown()


def _exporter(protocol: str) -> Any:
    # Either exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT, ... itself.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
    return OTLPSpanExporter()


def current_trace_ids() -> tuple[str, str] | None:
    """The trace and span id of the current span (for log lines), or None."""
    if api is None:
        return None
    context = api.current_span().get_span_context()
    return (f"{context.trace_id:032x}", f"{context.span_id:016x}") if context.is_valid else None


def start_request_span(scope: dict[str, Any]) -> tuple[Span, object]:
    """A server span for an HTTP request, child of the caller's ``traceparent`` if any, made the
    current span of the request's task (its upstream and database spans become its children)."""
    assert tracer is not None and api is not None
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    attributes: dict[str, Any] = {
        "http.request.method": scope["method"],
        "url.path": scope["path"],
        "url.scheme": scope.get("scheme", "http"),
        "network.protocol.version": scope.get("http_version", "1.1"),
    }
    client = scope.get("client")
    if client:
        attributes["client.address"] = client[0]
    if "user-agent" in headers:
        attributes["user_agent.original"] = headers["user-agent"]
    span = tracer.start_span(
        scope["method"], context=api.extract(headers), kind=api.SERVER, attributes=attributes
    )
    return span, api.attach(api.in_context(span))


def end_request_span(
    span: Span, token: object, method: str, status: int, route: str | None, request_id: str
) -> None:
    assert api is not None
    span.set_attribute("http.response.status_code", status)
    span.set_attribute("agentgate.request_id", request_id)
    if route:
        span.set_attribute("http.route", route)
        span.update_name(f"{method} {route}")
    if status >= 500:
        span.set_status(api.ERROR)
    span.end()
    api.detach(token)  # type: ignore[arg-type]


def trace_id_of(span: Span) -> str:
    return f"{span.get_span_context().trace_id:032x}"


# -- database statements, within a request only -----------------------------------------------


def _statement_started(
    conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
) -> None:
    if tracer is None or api is None:
        return
    if not api.current_span().is_recording():
        return  # background work (the usage writer, the routing check) would be a trace a second
    operation = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
    attributes = {
        "db.system.name": conn.dialect.name,
        "db.operation.name": operation,
        "db.query.text": statement[:2000],
    }
    span = tracer.start_span(operation, kind=api.CLIENT, attributes=attributes)
    setattr(context, SPAN_KEY, span)


def _statement_ended(
    conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
) -> None:
    span = getattr(context, SPAN_KEY, None)
    if span is not None:
        span.end()
        setattr(context, SPAN_KEY, None)


def _statement_failed(exception_context: Any) -> None:
    span = getattr(exception_context.execution_context, SPAN_KEY, None)
    if span is not None and api is not None:
        api.failed(span, exception_context.original_exception)
        span.end()
        setattr(exception_context.execution_context, SPAN_KEY, None)


_DB_LISTENERS = {
    "before_cursor_execute": _statement_started,
    "after_cursor_execute": _statement_ended,
    "handle_error": _statement_failed,
}
