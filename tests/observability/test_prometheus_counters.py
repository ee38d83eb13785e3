"""What the Prometheus exposition counts below the HTTP edge, in one process over ASGI: upstream
calls by backend and outcome, tokens by model and kind, webhook deliveries and mail by outcome;
and the OpenMetrics format on request. The counters are per process, so each test compares a
scrape after with a scrape before."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from agent_server.admin.wiring import admin_services
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.events import KeyRotated
from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway import provision
from agent_server.mail.outbox import Mail
from agent_server.storage.migrate import upgrade
from http_facade.app import create_app
from tests.admin.conftest import Receiver, receiver  # noqa: F401  (the real loopback receiver fixture)
from tests.conftest import BASE_URL, running
from tests.llm.fake_upstream import FakeUpstream

CHAT = "/v1/chat/completions"
UPSTREAM_BUCKETS = "agentgate_upstream_request_duration_seconds"


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
async def gateway(
    tmp_path: Path, upstream: FakeUpstream
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, str]]:
    """A production app with one upstream (``gpt-4o-mini`` -> ``upstream-model-1``) and a live key."""
    settings = Settings(
        mode="production",
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        upstreams=[
            UpstreamConfig(
                name="up",
                base_url=upstream.base_url,
                api_key=SecretStr("sk-upstream"),
                models={"gpt-4o-mini": "upstream-model-1"},
            )
        ],
        llm_retry_backoff_seconds=0.01,
    )
    upgrade(settings)
    tenant = await provision.create_tenant(settings, "metered", "enterprise", 10**9)
    _, key = await provision.create_key(settings, tenant.id, "metered", ["chat"])
    app = create_app(settings, clock=ManualClock(start=time.time()))
    async with (
        running(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield app, client, key


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """A sandbox app (webhooks to loopback are allowed there), its mail and webhook workers stopped."""
    settings = Settings(
        data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, mail_worker=False, webhook_worker=False
    )
    app = create_app(settings, clock=ManualClock(start=time.time()))
    async with (
        running(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield app, client


async def scrape(client: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics/prometheus")
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_upstream_calls_and_tokens_are_counted_by_backend_outcome_model_and_kind(
    gateway: tuple[FastAPI, httpx.AsyncClient, str], upstream: FakeUpstream
) -> None:
    _, client, key = gateway
    before = await scrape(client)
    auth = {"Authorization": f"Bearer {key}"}
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
    assert (await client.post(CHAT, json=body, headers=auth)).status_code == 200
    assert (await client.post(CHAT, json={**body, "stream": True}, headers=auth)).status_code == 200
    upstream.script.fail_times, upstream.script.fail_status = 2, 500  # the first try and its one retry
    assert (await client.post(CHAT, json=body, headers=auth)).status_code == 502
    after = await scrape(client)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    call = {"backend": "up", "endpoint": "chat/completions"}
    assert grew(f"{UPSTREAM_BUCKETS}_count", **call, outcome="ok") == 2
    assert grew(f"{UPSTREAM_BUCKETS}_count", **call, outcome="error") == 1
    assert grew(f"{UPSTREAM_BUCKETS}_bucket", **call, outcome="ok", le="+Inf") == 2
    assert grew(f"{UPSTREAM_BUCKETS}_sum", **call, outcome="ok") > 0
    # The fake upstream reports 11 prompt tokens and one completion token per chunk (5).
    assert grew("agentgate_llm_tokens_total", model="gpt-4o-mini", kind="input") == 22
    assert grew("agentgate_llm_tokens_total", model="gpt-4o-mini", kind="output") == 10
    series = {"method": "POST", "route": CHAT, "model": "gpt-4o-mini"}
    assert grew("agentgate_http_upstream_errors_total", **series) == 1
    assert grew("agentgate_http_requests_total", **series, status="200") == 2


async def test_mail_and_webhook_deliveries_are_counted_by_outcome(
    sandbox: tuple[FastAPI, httpx.AsyncClient],
    receiver: Receiver,  # noqa: F811  (the imported fixture)
) -> None:
    app, client = sandbox
    services = app.state.services
    before = await scrape(client)
    await app.state.accounts.mailer.send(Mail(to="ada@example.com", subject="Hi", text="Hello", kind="test"))
    assert await app.state.accounts.mailer.worker.tick() == 1  # written to the outbox folder: sent
    admin = admin_services(services)
    await admin.webhooks.create("ten_metered", receiver.url, ["key.rotated"])
    receiver.respond(503)
    event = KeyRotated(
        tenant_id="ten_metered", occurred_at=time.time(), old_key_id="key_a", new_key_id="key_b", name="ci"
    )
    await services.events.publish(event)
    assert await admin.worker.tick() == 1  # 503: tried again later
    services.clock.advance(3600)
    assert await admin.worker.tick() == 1  # 200
    after = await scrape(client)

    def grew(name: str, outcome: str) -> float:
        return value(after, name, outcome=outcome) - value(before, name, outcome=outcome)

    assert grew("agentgate_mail_messages_total", "sent") == 1
    assert grew("agentgate_webhook_deliveries_total", "retrying") == 1
    assert grew("agentgate_webhook_deliveries_total", "delivered") == 1
    assert grew("agentgate_webhook_deliveries_total", "failed") == 0


async def test_openmetrics_on_request_and_no_token_needed_when_none_is_set(
    gateway: tuple[FastAPI, httpx.AsyncClient, str],
) -> None:
    _, client, _ = gateway
    response = await client.get("/metrics/prometheus", headers={"Accept": "application/openmetrics-text"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert response.text.endswith("# EOF\n")
    assert "# TYPE agentgate_http_request_duration_seconds histogram" in response.text
    assert response.headers["Cache-Control"] == "no-store"


async def test_tool_calls_are_counted_by_tool_surface_and_outcome(
    sandbox: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    """One MCP call on the fast path, one through the REST tool call, one refused: each a count."""
    _, client = sandbox
    before = await scrape(client)
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    ok = await client.post(
        "/api/mcp.php", json={**rpc, "params": {"name": "get_company_info", "arguments": {}}}
    )
    assert ok.status_code == 200 and "structuredContent" in ok.text
    rest = await client.post("/api/tools/call", json={"name": "get_company_info", "arguments": {}})
    assert rest.status_code == 200
    refused = await client.post("/api/tools/call", json={"name": "get_weather", "arguments": {}})
    assert refused.status_code == 400
    after = await scrape(client)

    def grew(**labels: str) -> float:
        return value(after, "agentgate_tool_calls_total", **labels) - value(
            before, "agentgate_tool_calls_total", **labels
        )

    assert grew(tool="get_company_info", surface="mcp", outcome="ok") == 1
    assert grew(tool="get_company_info", surface="http", outcome="ok") == 1
    assert grew(tool="get_weather", surface="http", outcome="validation_error") == 1
