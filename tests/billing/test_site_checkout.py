"""``/api/checkout.php`` (the public site's anonymous checkout) sells through the configured provider, and
its orders become ``paid`` or ``failed`` from the provider's events."""

from __future__ import annotations

from typing import Any

from tests.billing.conftest import Billed
from tests.conftest import BASE_URL


async def start(billed: Billed, item_id: str, quantity: int = 1) -> dict[str, Any]:
    body = {"item_id": item_id, "quantity": quantity, "email": "buyer@example.com"}
    answer = await billed.client.post("/api/checkout.php", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


async def order_status(billed: Billed, order_id: str) -> str:
    return (await billed.client.get("/api/checkout.php", params={"order_id": order_id})).json()["status"]


async def session_of(billed: Billed, order: dict[str, Any]) -> dict[str, Any]:
    """The checkout the order opened at the provider, as the payer helper needs it."""
    if billed.stripe is None:
        return {"url": order["checkout_url"]}
    intents = billed.stripe.get("/v1/payment_intents", limit=100).json()["data"]
    intent = next(i for i in intents if i["metadata"].get("reference") == order["order_id"])
    assert (intent["amount"], intent["currency"]) == (order["amount_minor"], "eur")
    return {"session_ref": intent["id"], "flow": "payment_intent"}


async def test_a_site_order_is_paid_through_the_configured_provider(billed: Billed) -> None:
    order = await start(billed, "agent-engineering-fundamentals", quantity=2)
    assert (
        order["provider"] == billed.provider
        and order["amount_minor"] == 138_000
        and order["status"] == "pending"
    )
    if billed.stripe is None:
        assert order["checkout_url"].startswith(f"{BASE_URL}/billing_provider/sandbox/checkout/cs_sbx_")
    await billed.pay(await session_of(billed, order))
    assert await order_status(billed, order["order_id"]) == "paid"


async def test_a_declined_site_order_fails(billed: Billed) -> None:
    order = await start(billed, "ai-readiness-assessment")
    await billed.pay(await session_of(billed, order), card="declined")
    assert await order_status(billed, order["order_id"]) == "failed"
    if billed.stripe is None:  # the buyer tries another card on the same page
        await billed.pay({"url": order["checkout_url"]})
        assert await order_status(billed, order["order_id"]) == "paid"


async def test_the_site_checkout_takes_the_quantity_as_a_json_integer(billed: Billed) -> None:
    body = {"item_id": "agent-engineering-fundamentals", "quantity": "2", "email": "buyer@example.com"}
    answer = await billed.client.post("/api/checkout.php", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "quantity"
