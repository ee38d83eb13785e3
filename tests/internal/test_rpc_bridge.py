"""``POST /internal/rpc``: a JSON-RPC client (``jsonrpcclient``) signing its requests like an internal
service, against the real app on a ManualClock; every refusal of the signature scheme; the route's
absence from the public descriptions, and from the app when no credential is configured."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from jsonrpcclient import Error, Ok, notification, parse, request

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository
from agent_server.gateway.usage_range import UsagePeriod
from agent_server.gateway.usage_report import usage_report
from agent_server.internal_rpc.signing import signature_header
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

URL = "/internal/rpc"
OPS_SECRET = "ops-" + "s3cr3t-" * 8
REPORTER_SECRET = "reporter-" + "k3y-" * 10
KEYS = [
    {"id": "ops", "secret": OPS_SECRET, "scopes": ["tools", "keys:verify", "usage:report", "tenants:read"]},
    {"id": "reporter", "secret": REPORTER_SECRET, "scopes": ["usage:report"]},
]
SECRETS = {"ops": OPS_SECRET, "reporter": REPORTER_SECRET}


class Service:
    """An internal service: signs each body with its credential at the app's clock."""

    def __init__(self, client: httpx.AsyncClient, clock: ManualClock, key_id: str = "ops") -> None:
        self.client, self.clock, self.key_id = client, clock, key_id

    def headers(self, body: bytes, *, at: float | None = None, secret: str | None = None) -> dict[str, str]:
        timestamp = int(self.clock.now() if at is None else at)
        return {
            "Content-Type": "application/json",
            "X-Internal-Key-Id": self.key_id,
            "X-Internal-Signature": signature_header(secret or SECRETS[self.key_id], timestamp, body),
        }

    async def post(self, payload: Any, **signing: Any) -> httpx.Response:
        body = json.dumps(payload).encode()
        return await self.client.post(URL, content=body, headers=self.headers(body, **signing))

    async def call(self, method: str, **params: Any) -> Ok | Error:
        response = await self.post(request(method, params=params))
        return parse(response.json())


@pytest.fixture
async def bridge_app(tmp_path: Path, clock: ManualClock) -> AsyncIterator[FastAPI]:
    settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, internal_rpc_keys=KEYS)
    async with running(create_app(settings, clock=clock)) as app:
        yield app


@pytest.fixture
async def ops(bridge_app: FastAPI, clock: ManualClock) -> AsyncIterator[Service]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(bridge_app), base_url=BASE_URL) as client:
        yield Service(client, clock)


async def live_key(app: FastAPI, clock: ManualClock, plan: str = "professional") -> tuple[str, str, str]:
    """A tenant and one of its API keys: (tenant id, key id, the key itself)."""
    gateway = app.state.gateway
    tenant = await repository.create_tenant(gateway.db, clock.now(), f"tenant-{uuid.uuid4().hex[:8]}", plan)
    record, key = await gateway.issue_key(tenant.id, "service key", ["chat"])
    return tenant.id, record.id, key


# Calls


async def test_a_tool_is_called_through_the_registry(ops: Service) -> None:
    answer = await ops.call("tools.call", name="get_pricing", arguments={"category": "plans"})
    assert isinstance(answer, Ok), answer
    assert answer.result["name"] == "get_pricing"
    assert {item["id"] for item in answer.result["result"]["items"]} >= {"starter", "professional"}


async def test_a_batch_is_answered_item_by_item(ops: Service) -> None:
    batch = [
        request("tools.list"),
        request("tools.call", params={"name": "get_company_info"}),
        request("tools.call", params={"name": "faq_lookup", "arguments": {"limit": 2}}),
        notification("tools.list"),  # a notification in a batch gets no answer
    ]
    response = await ops.post(batch)
    assert response.status_code == 200
    answers = {a.id: a for a in parse(response.json())}
    assert len(answers) == 3
    listed, company, invalid = (answers[r["id"]] for r in batch[:3])
    assert isinstance(listed, Ok) and "get_weather" in {t["name"] for t in listed.result["tools"]}
    assert isinstance(company, Ok) and company.result["result"]["name"] == "agentgate"
    assert isinstance(invalid, Error) and invalid.code == -32602
    assert invalid.data == {"code": "validation_error", "param": "query"}


async def test_errors_name_the_method_field_or_tool(ops: Service) -> None:
    unknown_tool = await ops.call("tools.call", name="launch_rockets")
    assert isinstance(unknown_tool, Error) and unknown_tool.code == -32004
    assert "launch_rockets" in unknown_tool.message and unknown_tool.data["param"] == "name"
    extra = await ops.call("tools.list", verbose=True)
    assert isinstance(extra, Error) and extra.code == -32602 and extra.data["param"] == "verbose"
    missing = await ops.call("keys.rotate", key="x")
    assert isinstance(missing, Error) and missing.code == -32601
    positional = parse((await ops.post(request("tools.call", params=["get_pricing"]))).json())
    assert isinstance(positional, Error) and positional.code == -32602


async def test_keys_are_verified_without_exposing_secrets(
    bridge_app: FastAPI, ops: Service, clock: ManualClock
) -> None:
    tenant_id, key_id, key = await live_key(bridge_app, clock)
    answer = await ops.call("keys.verify", key=key)
    assert isinstance(answer, Ok), answer
    assert answer.result["valid"] is True
    assert (answer.result["tenant_id"], answer.result["key_id"]) == (tenant_id, key_id)
    assert answer.result["scopes"] == ["chat"] and answer.result["plan"]["id"] == "professional"
    assert key not in json.dumps(answer.result) and "digest" not in json.dumps(answer.result)

    await bridge_app.state.gateway.revoke_key(tenant_id, key_id)
    clock.advance(2)  # past the key cache's lifetime, as for /v1
    revoked = await ops.call("keys.verify", key=key)
    assert (
        isinstance(revoked, Ok) and revoked.result["valid"] is False and "revoked" in revoked.result["reason"]
    )
    garbage = await ops.call("keys.verify", key="sk_live_not-a-key")
    assert isinstance(garbage, Ok) and garbage.result == {"valid": False, "reason": "Malformed API key."}


async def test_usage_is_reported_as_gateway_rows(
    bridge_app: FastAPI, ops: Service, clock: ManualClock
) -> None:
    tenant_id, key_id, key = await live_key(bridge_app, clock)
    row = {"key": key, "model": "agentgate-mock-small", "endpoint": "/v1/embeddings", "prompt_tokens": 120}
    batch = [request("usage.report", params=row), request("usage.report", params={**row, "status": 500})]
    answers = parse((await ops.post(batch)).json())
    assert all(isinstance(a, Ok) and a.result["key_id"] == key_id for a in answers), answers
    gateway = bridge_app.state.gateway
    rows = (await usage_report(gateway, tenant_id, UsagePeriod(None, None)))["data"]
    assert [(r["model"], r["requests"], r["prompt_tokens"], r["errors"]) for r in rows] == [
        ("agentgate-mock-small", 2, 240, 1)
    ]
    bad = await ops.call("usage.report", **{**row, "key": "sk_live_unknown"})
    assert isinstance(bad, Error) and bad.code == -32602 and bad.data["param"] == "key"


async def test_a_tenants_plan_is_read(bridge_app: FastAPI, ops: Service, clock: ManualClock) -> None:
    tenant_id, _, _ = await live_key(bridge_app, clock, plan="starter")
    answer = await ops.call("tenants.plan", tenant_id=tenant_id)
    assert isinstance(answer, Ok), answer
    assert answer.result["plan"]["id"] == "starter" and answer.result["rate_limit_per_minute"] == 60
    missing = await ops.call("tenants.plan", tenant_id="ten_missing")
    assert isinstance(missing, Error) and missing.code == -32004


async def test_a_lone_notification_gets_204(ops: Service) -> None:
    response = await ops.post(notification("tools.list"))
    assert response.status_code == 204 and response.content == b""


# Refusals


def refusal(response: httpx.Response, status: int, code: int, case: str) -> str:
    assert response.status_code == status, response.text
    answer = parse(response.json())
    assert isinstance(answer, Error) and answer.code == code and answer.data["code"] == case
    return answer.message


async def test_an_unsigned_request_is_refused(ops: Service) -> None:
    response = await ops.client.post(URL, json=request("tools.list"))
    assert "X-Internal-Signature" in refusal(response, 401, -32001, "signature_missing")


async def test_an_expired_or_early_signature_is_refused(ops: Service, clock: ManualClock) -> None:
    old = await ops.post(request("tools.list"), at=clock.now() - 301)
    assert "301 s old" in refusal(old, 401, -32001, "signature_expired")
    early = await ops.post(request("tools.list"), at=clock.now() + 400)
    refusal(early, 401, -32001, "signature_expired")
    assert (await ops.post(request("tools.list"), at=clock.now() - 299)).status_code == 200


async def test_a_replayed_request_is_refused(ops: Service) -> None:
    body = json.dumps(request("tools.list")).encode()
    headers = ops.headers(body)
    assert (await ops.client.post(URL, content=body, headers=headers)).status_code == 200
    again = await ops.client.post(URL, content=body, headers=headers)
    refusal(again, 401, -32001, "signature_replayed")


@pytest.mark.redis
async def test_a_signature_used_on_one_process_is_refused_on_every_other(
    redis_url: str, tmp_path: Path, clock: ManualClock
) -> None:
    """Two apps (two processes of one deployment) remember used signatures in the same Redis."""
    import redis.asyncio as redis

    prefix = f"agentgate-rpc-test:{uuid.uuid4().hex}:"
    shared = {"redis_url": redis_url, "kv_prefix": prefix, "internal_rpc_keys": KEYS}
    body = json.dumps(request("tools.list")).encode()
    try:
        async with (
            running(create_app(Settings(data_dir=tmp_path / "a", **shared), clock=clock)) as first,
            running(create_app(Settings(data_dir=tmp_path / "b", **shared), clock=clock)) as second,
            httpx.AsyncClient(transport=httpx.ASGITransport(first), base_url=BASE_URL) as one,
            httpx.AsyncClient(transport=httpx.ASGITransport(second), base_url=BASE_URL) as other,
        ):
            headers = Service(one, clock).headers(body)
            assert (await one.post(URL, content=body, headers=headers)).status_code == 200
            refusal(await other.post(URL, content=body, headers=headers), 401, -32001, "signature_replayed")
    finally:
        client = redis.from_url(redis_url)
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_a_wrong_signature_is_refused(ops: Service) -> None:
    body = json.dumps(request("tools.list")).encode()
    forged = ops.headers(body, secret="an attacker's guess at the secret!!")
    refusal(await ops.client.post(URL, content=body, headers=forged), 401, -32001, "signature_mismatch")
    tampered = ops.headers(body)  # signed, then the body changed
    changed = body.replace(b"tools.list", b"tools.call")
    refusal(await ops.client.post(URL, content=changed, headers=tampered), 401, -32001, "signature_mismatch")
    malformed = {**ops.headers(body), "X-Internal-Signature": "sha256=abc"}
    refusal(await ops.client.post(URL, content=body, headers=malformed), 401, -32001, "signature_malformed")
    stranger = {**ops.headers(body), "X-Internal-Key-Id": "stranger"}
    refusal(await ops.client.post(URL, content=body, headers=stranger), 401, -32001, "unknown_key_id")


async def test_a_wrongly_scoped_request_is_refused(ops: Service) -> None:
    reporter = Service(ops.client, ops.clock, key_id="reporter")
    response = await reporter.post(request("tools.call", params={"name": "get_company_info"}))
    assert "'tools'" in refusal(response, 403, -32003, "insufficient_scope")
    batch = [request("tenants.plan", params={"tenant_id": "x"}), request("keys.verify", params={"key": "x"})]
    answers = parse((await reporter.post(batch)).json())
    assert [a.code for a in answers] == [-32003, -32003]


# Absent from every description, and absent without credentials


async def test_the_route_is_in_no_public_description(ops: Service) -> None:
    client = ops.client
    assert URL not in (await client.get("/openapi.json")).json()["paths"]
    for path in (
        "/openapi.json",
        "/.well-known/api-catalog",
        "/.well-known/mcp.json",
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
        "/.well-known/agent-skills/index.json",
        "/.well-known/oauth-authorization-server",
        "/AGENTS.md",
        "/api/capabilities.php",
        "/api/mcp.php",
    ):
        response = await client.get(path)
        assert response.status_code == 200, path
        assert "/internal" not in response.text, path


async def test_without_credentials_the_route_does_not_exist(client: httpx.AsyncClient) -> None:
    body = json.dumps(request("tools.list")).encode()
    signed = {"X-Internal-Key-Id": "ops", "X-Internal-Signature": signature_header(OPS_SECRET, 0, body)}
    response = await client.post(URL, content=body, headers=signed)
    nothing = await client.post("/internal/nothing-here", content=body, headers=signed)
    assert response.status_code == nothing.status_code == 404
    assert response.json()["error"]["type"] == nothing.json()["error"]["type"] == "not_found"
