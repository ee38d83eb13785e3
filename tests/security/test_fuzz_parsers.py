"""Property-based fuzzing (hypothesis) of the request parsers, over HTTP to the real app: the relayed
gateway bodies, JSON-RPC (MCP), registration, the payment provider's webhook and CSP reports.

Whatever the body, the answer is never a 5xx or a traceback, and it speaks the envelope of its
path: the gateway envelope (spec 7.1) on /v1 and /admin, the site envelope (7.2) on /register,
JSON-RPC on the MCP endpoint. Bounded: ``EXAMPLES`` bodies per parser (about 15 s in all).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

pytestmark = [pytest.mark.fuzz, pytest.mark.asyncio(loop_scope="module")]
EXAMPLES = 100
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MCP = "/api/mcp.php"

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
# Big and odd numbers where parsers meet databases and upstreams.
edge_numbers = st.sampled_from([0, -1, 2**31, 2**63, 2**64, 10**30, 1e308, -1e308, 0.5])
field_values = json_values | edge_numbers


def mutations(fields: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Known fields (and a few unknown ones) set to anything."""
    names = st.sampled_from(fields) | st.text(min_size=1, max_size=12)
    return st.dictionaries(names, field_values, max_size=4)


def body_bytes(base: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """A valid body changed field by field, a JSON value of any shape, or bytes that are no JSON."""
    mutated = mutations(list(base)).map(lambda changes: json.dumps({**base, **changes}).encode())
    anything = json_values.map(lambda value: json.dumps(value).encode())
    return st.one_of(mutated, mutated, anything, st.binary(max_size=200))


GATEWAY_BASES = {
    "/v1/chat/completions": {
        "model": "agentgate-mock-small",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
        "max_tokens": 16,
        "n": 1,
        "tools": [],
        "stop": None,
    },
    "/v1/completions": {"model": "agentgate-mock-small", "prompt": "hi", "max_tokens": 16, "echo": False},
    "/v1/embeddings": {"model": "text-embedding-3-small", "input": "hi", "dimensions": 8},
    "/v1/responses": {"model": "agentgate-mock-small", "input": "hi", "max_output_tokens": 16},
}
REGISTER = {
    "email": "someone@example.com",
    "organisation": "Example",
    "plan": "starter",
    "password": "a passphrase of some length",
}


class Fuzzed:
    def __init__(self, client: httpx.AsyncClient, key: str) -> None:
        self.client, self.key = client, key


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Fuzzed]:
    settings_ = Settings(
        data_dir=tmp_path_factory.mktemp("fuzz"),
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        register_limit_per_ip=100_000,  # the parsers, not the limits, are under test here
        register_limit_per_email=100_000,
        csp_reports_per_ip_per_hour=100_000,
        webhook_worker=False,
    )
    app = create_app(settings_)
    async with running(app):
        gateway = app.state.gateway
        tenant = await repo.create_tenant(gateway.db, gateway.clock.now(), "fuzz", "enterprise", 10**9)
        _, key = await gateway.issue_key(tenant.id, "fuzz", ["chat", "embeddings", "models"])
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client:
            yield Fuzzed(client, key)


def assert_sound(response: httpx.Response, envelope: str) -> None:
    """No server error, no traceback, and the envelope the path promises."""
    assert response.status_code < 500, (response.status_code, response.text[:500])
    assert "Traceback" not in response.text and 'File "' not in response.text
    if response.status_code < 400:
        return
    error = response.json()["error"]
    if envelope == "gateway":
        assert {"type", "message", "code"} <= set(error), error
        assert error["type"].endswith("_error") or error["type"] == "insufficient_quota", error
    else:
        assert {"type", "message", "code", "documentation_url"} <= set(error), error
        assert error["code"] == error["code"].upper(), error


@pytest.mark.parametrize("path", GATEWAY_BASES)
@FUZZ
@given(data=st.data())
async def test_gateway_bodies(fuzzed: Fuzzed, path: str, data: st.DataObject) -> None:
    raw = data.draw(body_bytes(GATEWAY_BASES[path]))
    headers = {"Authorization": f"Bearer {fuzzed.key}", "Content-Type": "application/json"}
    response = await fuzzed.client.post(path, content=raw, headers=headers)
    assert_sound(response, "gateway")


rpc_requests = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0") | field_values,
        "method": st.sampled_from(
            [
                "initialize",
                "ping",
                "tools/list",
                "tools/call",
                "resources/list",
                "resources/read",
                "prompts/get",
            ]
        )
        | st.text(max_size=20),
    },
    optional={"id": st.integers() | st.text(max_size=10) | st.none(), "params": field_values},
)


@FUZZ
@given(body=st.one_of(rpc_requests, st.lists(rpc_requests, max_size=3), json_values))
async def test_json_rpc_requests(fuzzed: Fuzzed, body: Any) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    response = await fuzzed.client.post(MCP, content=json.dumps(body).encode(), headers=headers)
    assert response.status_code < 500, (response.status_code, response.text[:500])
    assert "Traceback" not in response.text
    if response.headers.get("content-type", "").startswith("application/json") and response.content:
        answer = response.json()
        for message in answer if isinstance(answer, list) else [answer]:
            assert message["jsonrpc"] == "2.0" and ("result" in message or "error" in message), message


@FUZZ
@given(raw=body_bytes(REGISTER))
async def test_registration_bodies(fuzzed: Fuzzed, raw: bytes) -> None:
    response = await fuzzed.client.post(
        "/register", content=raw, headers={"Content-Type": "application/json"}
    )
    assert_sound(response, "site")


@FUZZ
@given(
    raw=body_bytes({"id": "evt_1", "type": "invoice.paid", "created": 1, "data": {"object": {}}}),
    signature=st.text(max_size=120).filter(lambda s: s.isprintable() and s.isascii()),
)
async def test_payment_provider_webhooks(fuzzed: Fuzzed, raw: bytes, signature: str) -> None:
    headers = {"Content-Type": "application/json", "Stripe-Signature": signature}
    response = await fuzzed.client.post("/billing_provider/webhooks", content=raw, headers=headers)
    assert_sound(response, "gateway")


@FUZZ
@given(
    raw=body_bytes({"csp-report": {"document-uri": "https://x", "violated-directive": "img-src"}}),
    content_type=st.sampled_from(["application/csp-report", "application/reports+json", "text/plain"]),
)
async def test_csp_reports(fuzzed: Fuzzed, raw: bytes, content_type: str) -> None:
    response = await fuzzed.client.post(
        "/admin/csp-report/", content=raw, headers={"Content-Type": content_type}
    )
    assert_sound(response, "gateway")
