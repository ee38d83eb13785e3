"""The ACP MCP binding through the official ``mcp`` SDK against a real uvicorn: the five tools with
the spec's JSON Schemas; a purchase with an agent platform's credential (create, update with an
address, complete with a sandbox token); the same answers over /api/tools/call and REST (parity);
the signed ``order_create`` at a loopback receiver, the administrator marks the order fulfilled, the
``order_update`` arrives; the spec's Error in JSON-RPC error data."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from agent_server.storage.db import Database
from http_facade.cli import main
from tests.admin.conftest import Receiver, receiver  # noqa: F401  (the loopback receiver fixture)
from tests.commerce.conftest import TRAINING, VERSION, assert_valid, bundle, payment
from tests.commerce.test_order_webhooks import assert_webhook_event, verify
from tests.conftest import LiveServer
from tests.gateway.conftest import PASSWORD

TOOLS = {
    "create_checkout_session": "CheckoutSessionCreateRequest",
    "get_checkout_session": None,
    "update_checkout_session": "CheckoutSessionUpdateRequest",
    "complete_checkout_session": "CheckoutSessionCompleteRequest",
    "cancel_checkout_session": "CancelSessionRequest",
}
ADDRESS = {
    "name": "Ada Buyer",
    "line_one": "Invalidenstrasse 1",
    "city": "Berlin",
    "state": "BE",
    "country": "DE",
    "postal_code": "10115",
}


def meta(**extra: str) -> dict[str, str]:
    return {"api_version": VERSION, "idempotency_key": str(uuid.uuid4()), **extra}


@pytest.fixture
def made(
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    receiver: Receiver,  # noqa: F811
) -> dict:
    """An agent platform made with the CLI on the live server's database, its order events going to
    the loopback receiver; the CLI's answer (credential and signing secret)."""
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(settings.data_dir))
    monkeypatch.delenv("AGENTGATE_DATABASE_URL", raising=False)
    assert main(["migrate"]) == 0
    capsys.readouterr()
    command = [
        "agent-platforms",
        "create",
        "--name",
        "MCP assistant",
        "--webhook-url",
        receiver.url,
        "--json",
    ]
    assert main(command) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def platform(made: dict) -> str:
    return made["credential"]


async def platform_admin_token(settings: Settings, server: LiveServer) -> str:
    """A platform administrator signed in on the live server (the admin API's JWT)."""
    db = Database(settings)
    try:
        tenant = await repo.create_tenant(db, 0.0, "Operators", "enterprise")
        user = repo.new_user(0.0, tenant.id, "ops@operators.example", await hash_password(PASSWORD),
                             ["platform:admin", "tenant:admin"])  # fmt: skip
        await repo.add_user(db, user)
    finally:
        await db.engine.dispose()
    async with httpx.AsyncClient(base_url=server.url) as http:
        login = await http.post(
            "/admin/auth/login", json={"email": "ops@operators.example", "password": PASSWORD}
        )
    assert login.status_code == 200, login.text
    return login.json()["access_token"]


async def arrived(receiver: Receiver, count: int) -> list:  # noqa: F811
    """The receiver's requests once ``count`` have come (the live server's worker sends them)."""
    for _ in range(200):
        if len(receiver.requests) >= count:
            return receiver.requests
        await asyncio.sleep(0.05)
    raise AssertionError(f"{len(receiver.requests)} order events arrived, not {count}")


def session_for(server: LiveServer, credential: str | None):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {credential}"} if credential else {}
    return streamable_http_client(
        f"{server.url}/api/mcp.php", http_client=httpx2.AsyncClient(headers=headers)
    )


async def test_a_purchase_through_the_five_tools_with_the_sdk(
    made: dict,
    live_server: LiveServer,
    receiver: Receiver,  # noqa: F811
    settings: Settings,
) -> None:
    platform = made["credential"]
    async with session_for(live_server, platform) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        listed = {t.name: t for t in (await mcp.list_tools()).tools}
        assert set(TOOLS) <= set(listed)
        for name, request in TOOLS.items():
            schema = listed[name].input_schema
            assert set(schema["required"]) >= {"meta", "id"} - (
                {"id"} if name.startswith("create") else set()
            )
            if request:  # the spec's request schema, bundled: its fields, no $ref left
                spec = bundle()["$defs"][request]
                assert set(schema["properties"]["payload"]["properties"]) == set(spec["properties"])
                assert "$ref" not in json.dumps(schema["properties"]["payload"])
            assert listed[name].output_schema and "$ref" not in json.dumps(listed[name].output_schema)

        created = await mcp.call_tool(
            "create_checkout_session",
            {
                "meta": meta(),
                "payload": {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}},
            },
        )
        assert created.is_error is False, created.content
        session = created.structured_content
        assert_valid("CheckoutSession", session)
        assert session["status"] == "not_ready_for_payment"
        details = {"name": "Ada Buyer", "email": "ada@example.com", "address": ADDRESS}
        updated = await mcp.call_tool(
            "update_checkout_session",
            {"meta": meta(), "id": session["id"], "payload": {"fulfillment_details": details}},
        )
        assert updated.structured_content["status"] == "ready_for_payment"
        assert updated.structured_content["fulfillment_details"]["address"]["city"] == "Berlin"
        done = await mcp.call_tool(
            "complete_checkout_session", {"meta": meta(), "id": session["id"], "payload": payment()}
        )
        assert done.is_error is False, done.content
        assert_valid("CheckoutSessionWithOrder", done.structured_content)
        order = done.structured_content["order"]
        got = await mcp.call_tool(
            "get_checkout_session", {"meta": {"api_version": VERSION}, "id": session["id"]}
        )
        assert got.structured_content["status"] == "completed" and got.structured_content["order"] == order

        with pytest.raises(MCPError) as refused:
            await mcp.call_tool("cancel_checkout_session", {"meta": meta(), "id": session["id"]})
        assert refused.value.code == -32000
        assert_valid("Error", refused.value.data)
        assert refused.value.data["code"] == "checkout_session_completed"

    # /api/tools/call runs the same implementation: the same session, the same answer.
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        over_http = await http.post(
            "/api/tools/call",
            json={
                "name": "get_checkout_session",
                "arguments": {"meta": {"api_version": VERSION}, "id": session["id"]},
            },
            headers={"Authorization": f"Bearer {platform}"},
        )
        assert over_http.status_code == 200, over_http.text
        assert over_http.json()["result"] == got.structured_content
        rest = await http.get(
            f"/agentic_commerce/checkout_sessions/{session['id']}",
            headers={"Authorization": f"Bearer {platform}", "API-Version": VERSION},
        )
        assert rest.json() == got.structured_content

    # The order events reach the platform signed, as the webhook OpenAPI defines them.
    [created] = await arrived(receiver, 1)
    verify(made["signing_secret"], created.headers, created.body)
    event = json.loads(created.body)
    assert_webhook_event(event)
    assert event["type"] == "order_create" and event["data"]["id"] == order["id"]
    token = await platform_admin_token(settings, live_server)
    async with httpx.AsyncClient(base_url=live_server.url) as admin:
        moved = await admin.patch(
            f"/admin/platform/agent-orders/{order['id']}",
            json={"status": "completed"},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert moved.status_code == 200, moved.text
    fulfilled = (await arrived(receiver, 2))[1]
    verify(made["signing_secret"], fulfilled.headers, fulfilled.body)
    event = json.loads(fulfilled.body)
    assert_webhook_event(event)
    assert event["type"] == "order_update" and event["data"]["status"] == "completed"


async def test_without_a_platform_credential_the_tools_refuse(platform: str, live_server: LiveServer) -> None:
    async with session_for(live_server, None) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        with pytest.raises(MCPError) as refused:
            await mcp.call_tool(
                "create_checkout_session",
                {
                    "meta": meta(),
                    "payload": {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}},
                },
            )
        assert refused.value.code == -32000 and refused.value.data["code"] == "missing_credential"
    async with session_for(live_server, platform) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        with pytest.raises(MCPError) as bad:
            await mcp.call_tool(
                "create_checkout_session",
                {
                    "meta": meta(),
                    "payload": {"currency": "eur", "line_items": [{"id": "nope"}], "capabilities": {}},
                },
            )
        assert bad.value.data == {
            "type": "invalid_request",
            "code": "invalid_item_id",
            "message": bad.value.data["message"],
            "param": "$.line_items[0].id",
        }


async def test_a_stateful_session_reads_the_credential_of_each_request(
    platform: str, settings: Settings
) -> None:
    """With MCP sessions on, tools run in the session's task: the credential still comes from the
    request at hand (the SDK's request context), not from the one that opened the session."""
    stateful = settings.model_copy(update={"mcp_sessions": True})
    with LiveServer(stateful) as server:
        seen: list[str] = []
        calls = {"n": 0}

        async def credential_after_open(request: httpx2.Request) -> None:
            calls["n"] += 1
            if calls["n"] > 2:  # initialize and its notification go without one
                request.headers["Authorization"] = f"Bearer {platform}"
            seen.append(request.headers.get("mcp-session-id", ""))

        client = httpx2.AsyncClient(event_hooks={"request": [credential_after_open]})
        async with (
            streamable_http_client(f"{server.url}/api/mcp.php", http_client=client) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            body = {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}}
            created = await mcp.call_tool("create_checkout_session", {"meta": meta(), "payload": body})
            assert created.is_error is False, created.content
            assert_valid("CheckoutSession", created.structured_content)
        assert any(seen[2:])  # the calls went within the session
