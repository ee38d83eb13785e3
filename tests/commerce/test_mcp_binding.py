"""The ACP MCP binding through the official ``mcp`` SDK against a real uvicorn: the five tools with
the spec's JSON Schemas, a purchase made with an agent platform's credential, the spec's Error in
JSON-RPC error data, and the same answers over /api/tools/call (parity)."""

from __future__ import annotations

import json
import uuid

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agent_server.settings import Settings
from http_facade.cli import main
from tests.commerce.conftest import TRAINING, VERSION, assert_valid, bundle, payment
from tests.conftest import LiveServer

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
def platform(settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """An agent platform made with the CLI on the live server's database; its credential."""
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(settings.data_dir))
    monkeypatch.delenv("AGENTGATE_DATABASE_URL", raising=False)
    assert main(["migrate"]) == 0
    capsys.readouterr()
    assert main(["agent-platforms", "create", "--name", "MCP assistant", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["credential"]


def session_for(server: LiveServer, credential: str | None):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {credential}"} if credential else {}
    return streamable_http_client(
        f"{server.url}/api/mcp.php", http_client=httpx2.AsyncClient(headers=headers)
    )


async def test_a_purchase_through_the_five_tools_with_the_sdk(platform: str, live_server: LiveServer) -> None:
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
