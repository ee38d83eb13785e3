"""A booked consulting package bought through the MCP binding with the official ``mcp`` SDK: the
booking option and the VAT of the delivery address arrive over MCP as over REST, and the signed
``order_create`` at the loopback receiver carries the tax and the booked range."""

from __future__ import annotations

import json

from mcp import ClientSession

from tests.admin.conftest import Receiver, receiver  # noqa: F401  (the loopback receiver fixture)
from tests.commerce.conftest import BOOKED, assert_valid, payment
from tests.commerce.test_mcp_binding import ADDRESS, arrived, made, meta, session_for  # noqa: F401
from tests.commerce.test_order_webhooks import assert_webhook_event, verify
from tests.conftest import LiveServer


def amounts(totals: list[dict]) -> dict[str, int]:
    return {entry["type"]: entry["amount"] for entry in totals}


async def test_a_booked_package_with_vat_through_the_sdk(
    made: dict,  # noqa: F811
    live_server: LiveServer,
    receiver: Receiver,  # noqa: F811
) -> None:
    async with (
        session_for(live_server, made["credential"]) as (read, write),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        payload = {
            "currency": "eur",
            "line_items": [{"id": BOOKED}],
            "capabilities": {},
            "buyer": {"email": "ada@example.com"},
            "fulfillment_details": {"name": "Ada Buyer", "address": {**ADDRESS, "country": "FR"}},
        }
        created = await mcp.call_tool("create_checkout_session", {"meta": meta(), "payload": payload})
        assert created.is_error is False, created.content
        session = created.structured_content
        assert_valid("CheckoutSession", session)
        assert session["status"] == "not_ready_for_payment"
        assert amounts(session["totals"])["tax"] == 350_000 * 20 // 100  # France: 20 %
        [problem] = [m for m in session["messages"] if m["type"] == "error"]
        assert problem["param"] == "$.selected_fulfillment_options"
        option = next(o for o in session["fulfillment_options"] if o["type"] == "local_delivery")
        chosen = {"type": "local_delivery", "option_id": option["id"], "item_ids": [f"li_{BOOKED}"]}
        updated = await mcp.call_tool(
            "update_checkout_session",
            {"meta": meta(), "id": session["id"], "payload": {"selected_fulfillment_options": [chosen]}},
        )
        assert updated.is_error is False, updated.content
        assert updated.structured_content["status"] == "ready_for_payment"
        done = await mcp.call_tool(
            "complete_checkout_session", {"meta": meta(), "id": session["id"], "payload": payment()}
        )
        assert done.is_error is False, done.content
        assert_valid("CheckoutSessionWithOrder", done.structured_content)
    [event_request] = await arrived(receiver, 1)
    verify(made["signing_secret"], event_request.headers, event_request.body)
    event = json.loads(event_request.body)
    assert_webhook_event(event)
    order = event["data"]
    assert amounts(order["totals"]) == {"subtotal": 350_000, "tax": 70_000, "total": 420_000}
    [fulfillment] = order["fulfillments"]
    window = option["delivery_window"]
    assert fulfillment["estimated_delivery"] == {"earliest": window["start"], "latest": window["end"]}
