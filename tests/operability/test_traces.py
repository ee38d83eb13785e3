"""Traces: ``agentgate serve`` with the standard OTEL_* variables pointing to a real OTLP receiver
on loopback; a chat request (JSON, then streaming) to a real upstream on loopback produces a trace
with the request's server span, the upstream's GenAI client span and the database spans. Then the
gRPC exporter from an app in process, and the switches that keep traces off."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.observability import telemetry
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.llm.fake_upstream import FakeUpstream
from tests.observability.otlp_receiver import GrpcOtlpReceiver, OtlpReceiver, ReceivedSpan
from tests.operability.served import serving

SERVER, CLIENT = 2, 3  # OTLP span kinds
CHAT = "/v1/chat/completions"


def one(spans: list[ReceivedSpan], **where: object) -> ReceivedSpan:
    found = [s for s in spans if all(getattr(s, k) == v for k, v in where.items())]
    assert len(found) == 1, (where, [(s.name, s.trace_id) for s in spans])
    return found[0]


async def test_a_chat_request_produces_a_trace_with_request_upstream_and_database_spans(
    tmp_path: Path,
) -> None:
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    with FakeUpstream() as upstream, OtlpReceiver() as receiver:
        config = [
            {"name": "up", "base_url": upstream.base_url, "models": {"gpt-4o-mini": "upstream-model-1"}}
        ]
        env = {
            "AGENTGATE_MODE": "production",
            "AGENTGATE_UPSTREAMS": json.dumps(config),
            "AGENTGATE_LOG_FORMAT": "json",
            "AGENTGATE_ACCESS_LOG": "true",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_SERVICE_NAME": "agentgate-under-test",
            "OTEL_BSP_SCHEDULE_DELAY": "50",  # export within 50 ms instead of 5 s
        }
        with serving(tmp_path, **env) as server:
            key = await server.key(mode="production")
            body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20}
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                headers = {"Authorization": f"Bearer {key}"}
                answer = await client.post(
                    CHAT,
                    json={**body, "temperature": 0.5},
                    headers={**headers, "traceparent": f"00-{trace_id}-{caller_span}-01"},
                )
                streamed = await client.post(
                    CHAT, json={**body, "stream": True}, headers={**headers, "X-Request-Id": "stream-req-1"}
                )
            # Both requests' spans: the upstream calls and the two server spans (a stream's ends last).
            spans = receiver.wait_for(
                lambda got: (
                    sum(s.name.startswith("chat ") for s in got) == 2
                    and sum(s.name == f"POST {CHAT}" for s in got) == 2
                )
            )
            lines = [json.loads(line) for line in server.log_lines()]
    assert answer.status_code == 200 and streamed.status_code == 200, (answer.text, streamed.text)

    # The JSON request: a child of the caller's span; without an X-Request-Id its id is the trace id.
    request = one(spans, name=f"POST {CHAT}", trace_id=trace_id)
    assert (request.kind, request.parent_span_id) == (SERVER, caller_span)
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["http.route"] == CHAT
    assert answer.headers["X-Request-Id"] == trace_id == request.attributes["agentgate.request_id"]
    assert request.resource["service.name"] == "agentgate-under-test"
    call = one(spans, name="chat upstream-model-1", trace_id=trace_id)
    assert (call.kind, call.parent_span_id) == (CLIENT, request.span_id)
    assert call.attributes["gen_ai.operation.name"] == "chat"
    assert call.attributes["gen_ai.system"] == call.attributes["gen_ai.provider.name"] == "openai"
    assert call.attributes["gen_ai.request.model"] == "upstream-model-1"
    assert call.attributes["gen_ai.request.max_tokens"] == 20
    assert call.attributes["gen_ai.request.temperature"] == 0.5
    assert call.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert (call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]) == (
        11,
        5,
    )
    assert call.attributes["server.address"] == "127.0.0.1" and call.attributes["agentgate.upstream"] == "up"
    # The key was read from the database during this request: its statements are children too.
    statements = [s for s in spans if s.trace_id == trace_id and "db.system.name" in s.attributes]
    assert statements and {s.parent_span_id for s in statements} == {request.span_id}
    assert {s.attributes["db.system.name"] for s in statements} == {"sqlite"}

    # The stream: its own trace, the client's request id passed on to the upstream.
    stream_request = one(spans, name=f"POST {CHAT}", kind=SERVER, parent_span_id="")
    stream_call = one(spans, name="chat upstream-model-1", trace_id=stream_request.trace_id)
    assert stream_call.parent_span_id == stream_request.span_id
    assert stream_call.attributes["agentgate.stream"] is True
    assert stream_call.attributes["gen_ai.usage.output_tokens"] == 5
    assert stream_request.attributes["agentgate.request_id"] == "stream-req-1"
    assert [h["x-request-id"] for h in upstream.headers] == [trace_id, "stream-req-1"]

    # The request's log lines name its trace, so a log line leads to the trace and back.
    logged = [line for line in lines if line.get("request_id") == trace_id]
    assert logged and all(line["trace_id"] == trace_id for line in logged)


async def test_traces_over_grpc_from_an_app_in_process_stop_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with GrpcOtlpReceiver() as receiver:
        for name in (
            "OTEL_SERVICE_NAME",
            "OTEL_RESOURCE_ATTRIBUTES",
            "OTEL_TRACES_EXPORTER",
            "OTEL_SDK_DISABLED",
        ):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)
        assert settings.tracing and settings.otel_traces_protocol == "grpc"
        app = create_app(settings)
        async with (
            running(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c,
        ):
            assert telemetry.tracer is not None
            health = await c.get("/health", headers={"X-Request-Id": "grpc-probe"})
        assert telemetry.tracer is None  # stopped with the app, its spans exported on the way out
        spans = receiver.spans
    assert health.status_code == 200
    probe = one(spans, name="GET /health")
    assert probe.attributes["agentgate.request_id"] == "grpc-probe"
    assert probe.attributes["http.route"] == "/health" and probe.resource["service.name"] == "agentgate"


def test_traces_are_off_without_a_collector_or_when_switched_off() -> None:
    assert not Settings(otel_traces_endpoint=None).tracing
    assert Settings(otel_traces_endpoint="http://127.0.0.1:4318").tracing
    assert not Settings(otel_traces_endpoint="http://127.0.0.1:4318", otel_sdk_disabled=True).tracing
    assert not Settings(otel_traces_endpoint="http://127.0.0.1:4318", otel_traces_exporter="none").tracing
