"""Real OTLP trace receivers on loopback ports, decoding with opentelemetry-proto and keeping the
spans: ``OtlpReceiver`` accepts ``POST /v1/traces`` in protobuf (what the exporter sends) or JSON,
``GrpcOtlpReceiver`` the gRPC ``TraceService/Export`` call.

Both run in threads of their own (uvicorn, like ``tests/llm/fake_upstream.FakeUpstream``, and
grpc's server), so a server process under test, or the app in the test's own loop, can export to
them at any time.
"""

from __future__ import annotations

import gzip
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
import uvicorn
from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.conftest import free_port

PROTOBUF = "application/x-protobuf"


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int


class OtlpReceiver:
    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.spans: list[ReceivedSpan] = []
        self.content_types: list[str] = []
        app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="critical")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("OTLP receiver did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def wait_for(self, predicate: Any, timeout: float = 15.0) -> list[ReceivedSpan]:
        """The spans once ``predicate(spans)`` holds; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = list(self.spans)
            if predicate(spans):
                return spans
            time.sleep(0.05)
        raise AssertionError(f"no such spans after {timeout} s; received: {[s.name for s in self.spans]}")

    async def _traces(self, request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        content_type = request.headers.get("content-type", "")
        self.content_types.append(content_type)
        export = ExportTraceServiceRequest()
        if content_type.startswith("application/json"):
            Parse(body, export)
        else:
            export.ParseFromString(body)
        self.spans.extend(spans_of(export))
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)


class GrpcOtlpReceiver(TraceServiceServicer):
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.server = grpc.server(ThreadPoolExecutor(max_workers=2))
        add_TraceServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> GrpcOtlpReceiver:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=1).wait()

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        self.spans.extend(spans_of(request))
        return ExportTraceServiceResponse()


def spans_of(export: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    spans = []
    for resource_spans in export.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes=_attributes(span.attributes),
                        resource=resource,
                        status_code=span.status.code,
                    )
                )
    return spans


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None
