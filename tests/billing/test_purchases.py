"""One-off purchases of a tenant, priced from the content pack in integer minor units, with each provider:
``consulting-checkout``, ``workspace-checkout``, ``hardware-checkout`` and ``checkout``."""

from __future__ import annotations

import pytest

from tests.billing.conftest import Billed


async def provider_amount(billed: Billed, session_ref: str) -> tuple[int, str]:
    """What the provider will charge for the session: (amount in minor units, currency)."""
    if billed.stripe is not None:
        intent = billed.stripe.get(f"/v1/payment_intents/{session_ref}").json()
        return intent["amount"], intent["currency"]
    session = await billed.app.state.billing.provider.store.get("checkout_session", session_ref)
    return session["amount_total"], session["currency"]


@pytest.mark.parametrize(
    ("path", "body", "item", "quantity", "amount"),
    [
        (
            "consulting-checkout",
            {"package_id": "agent-architecture-review"},
            "agent-architecture-review",
            1,
            350_000,
        ),
        ("workspace-checkout", {"seats": 3}, "workspace-seat", 3, 3 * 39_900),  # tenant A: Professional
        (
            "hardware-checkout",
            {"item_id": "edge-inference-node", "quantity": 2},
            "edge-inference-node",
            2,
            1_780_000,
        ),
        (
            "checkout",
            {"item_id": "agent-engineering-fundamentals", "quantity": 3},
            "agent-engineering-fundamentals",
            3,
            207_000,
        ),
        ("checkout", {"item_id": "workspace-seat", "quantity": 2}, "workspace-seat", 2, 79_800),
    ],
)
async def test_one_off_checkouts_are_priced_in_minor_units(
    billed: Billed, path: str, body: dict, item: str, quantity: int, amount: int
) -> None:
    started = await billed.post(path, body)
    assert started.status_code == 201, started.text
    order = started.json()
    assert (
        order["order_id"].startswith("bord_")
        and order["status"] == "pending"
        and order["provider"] == billed.provider
    )
    assert (order["item"]["id"], order["quantity"], order["amount_minor"], order["currency"]) == (
        item,
        quantity,
        amount,
        "EUR",
    )
    assert order["unit_amount_minor"] * quantity == amount and order["amount"] == f"{amount / 100:.2f}"
    assert await provider_amount(billed, order["session_ref"]) == (amount, "eur")
    if item == "workspace-seat":
        assert order["details"] == {"seats": quantity, "months": 1}


async def test_a_paid_order_is_paid_after_the_providers_events(billed: Billed) -> None:
    order = (await billed.post("consulting-checkout", {"package_id": "ai-readiness-assessment"})).json()
    await billed.pay(order["checkout"])
    exchanged = (await billed.post("exchange-redirect", {"session_ref": order["session_ref"]})).json()
    assert exchanged["kind"] == "order" and exchanged["status"] == "complete"
    assert exchanged["order"]["order_id"] == order["order_id"] and exchanged["order"]["status"] == "paid"
    assert exchanged["order"]["amount_minor"] == 490_000


async def test_a_declined_card_fails_the_order(billed: Billed) -> None:
    order = (await billed.post("hardware-checkout", {"item_id": "rack-appliance-s"})).json()
    await billed.pay(order["checkout"], card="declined")
    exchanged = (await billed.post("exchange-redirect", {"session_ref": order["session_ref"]})).json()
    assert exchanged["status"] == "open" and exchanged["order"]["status"] == "failed"


async def test_what_is_not_sold_online_is_refused(billed: Billed) -> None:
    cases = [
        ("consulting-checkout", {"package_id": "custom-agent-development"}, "not_purchasable", "package_id"),
        ("consulting-checkout", {"package_id": "edge-inference-node"}, "unknown_item", "package_id"),
        ("hardware-checkout", {"item_id": "agent-architecture-review"}, "unknown_item", "item_id"),
        ("checkout", {"item_id": "agent-architecture-review", "quantity": 2}, "validation_error", "quantity"),
        ("checkout", {"item_id": "nope"}, "unknown_item", "item_id"),
        ("workspace-checkout", {"seats": 0}, "validation_error", "seats"),
        # Counts are JSON integers: a string of digits is not coerced.
        ("workspace-checkout", {"seats": "2"}, "validation_error", "seats"),
        (
            "hardware-checkout",
            {"item_id": "edge-inference-node", "quantity": "2"},
            "validation_error",
            "quantity",
        ),
        ("checkout", {"item_id": "workspace-seat", "quantity": "2"}, "validation_error", "quantity"),
        ("checkout", {"item_id": "workspace-seat", "quantity": 2.0}, "validation_error", "quantity"),
    ]
    for path, body, code, param in cases:
        answer = await billed.post(path, body)
        assert answer.status_code == 400, (path, answer.text)
        assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == (code, param)
    negotiated = await billed.post(
        "workspace-checkout", {"seats": 1}, who="platform"
    )  # Enterprise: by contract
    assert negotiated.status_code == 400 and negotiated.json()["error"]["code"] == "plan_not_purchasable"
    assert (await billed.post("checkout", {"item_id": "nope"}, who="a_member")).status_code == 403
