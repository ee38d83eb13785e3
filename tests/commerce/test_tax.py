"""VAT where it applies: the price book's tax table (content pack ``tax.yaml``) by the session's
destination country. Each taxed line carries a ``tax`` total, the session a ``tax`` total with its
breakdown; total = subtotal + fulfillment + tax; the charge and the order carry the tax."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from agent_server.commerce.tables import CommerceOrderRecord
from tests.commerce.conftest import HARDWARE, TRAINING, Shop, assert_valid, payment
from tests.commerce.test_complete import charges


def address(country: str) -> dict:
    return {"name": "Ada Buyer", "line_one": "Main Street 1", "city": "Capital", "state": "XX",
            "country": country, "postal_code": "10115"}  # fmt: skip


def amounts(totals: list[dict]) -> dict[str, int]:
    return {entry["type"]: entry["amount"] for entry in totals}


def vat(shop: Shop, country: str, net: int) -> tuple[Decimal, int]:
    """The rate the content pack sets for ``country`` and the tax on ``net`` minor units, half up."""
    rate = shop.app.state.services.knowledge.pack.tax.of(country).rate
    return rate, int((Decimal(net) * rate).quantize(Decimal(1), rounding=ROUND_HALF_UP))


async def with_address(shop: Shop, session: dict, country: str) -> dict:
    answer = await shop.post(
        f"/checkout_sessions/{session['id']}", {"fulfillment_details": {"address": address(country)}}
    )
    assert answer.status_code == 200, answer.text
    assert_valid("CheckoutSession", answer.json())
    return answer.json()


async def test_hardware_shipped_to_germany_carries_german_vat_to_the_charge_and_the_order(shop: Shop) -> None:
    session = await shop.create(HARDWARE, TRAINING, TRAINING)
    assert "tax" not in amounts(session["totals"])  # no destination yet: nothing is guessed
    session = await with_address(shop, session, "DE")
    assert session["status"] == "ready_for_payment"
    totals = amounts(session["totals"])
    rate, _ = vat(shop, "DE", 0)
    assert rate == Decimal("0.19")
    expected_tax = 0
    for line in session["line_items"]:
        line_totals = amounts(line["totals"])
        net = line["unit_amount"] * line["quantity"]
        _, tax = vat(shop, "DE", net)
        assert line_totals["subtotal"] == net and line_totals["tax"] == tax
        assert line_totals["total"] == net + tax
        expected_tax += tax
    assert totals["tax"] == expected_tax == round((890_000 + 2 * 69_000) * 0.19)
    assert totals["total"] == totals["subtotal"] + totals["fulfillment"] + totals["tax"]
    [tax_total] = [t for t in session["totals"] if t["type"] == "tax"]
    assert tax_total["breakdown"] == [{"jurisdiction": "VAT (Germany)", "rate": 0.19, "amount": expected_tax}]
    info = [m["content"] for m in session["messages"] if m["type"] == "info"]
    assert any("VAT (Germany) at 19 % is added for delivery to DE" in text for text in info)
    done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert done.status_code == 200, done.text
    assert_valid("CheckoutSessionWithOrder", done.json())
    [charge] = await charges(shop)
    assert charge["amount"] == totals["total"]  # the tax is charged
    order = (await shop.client.get(done.json()["order"]["permalink_url"])).json()
    assert_valid("Order", order)
    assert amounts(order["totals"]) == {
        "subtotal": totals["subtotal"],
        "tax": totals["tax"],
        "total": totals["total"],
    }
    assert sum(amounts(line["totals"])["tax"] for line in order["line_items"]) == totals["tax"]
    async with shop.app.state.services.db.session() as db:
        record = await db.get(CommerceOrderRecord, order["id"])
    assert record is not None and record.amount_minor == totals["total"]


async def test_the_destination_country_picks_the_rate_or_none(shop: Shop) -> None:
    session = await shop.create(HARDWARE)
    france = await with_address(shop, session, "FR")
    rate, tax = vat(shop, "FR", 890_000)
    assert rate == Decimal("0.2") and amounts(france["totals"])["tax"] == tax == 178_000
    assert amounts(france["totals"])["total"] == 890_000 + 178_000
    outside = await with_address(shop, session, "US")  # outside the table: an export, no VAT
    assert "tax" not in amounts(outside["totals"]) and amounts(outside["totals"])["total"] == 890_000
    assert all("tax" not in amounts(line["totals"]) for line in outside["line_items"])
    notes = [m["content"] for m in outside["messages"] if m["type"] == "info"]
    assert any("no VAT is charged for delivery to US" in note for note in notes)
    done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert done.status_code == 200, done.text
    [charge] = await charges(shop)
    assert charge["amount"] == 890_000


async def test_digital_lines_are_taxed_only_once_an_address_names_the_country(shop: Shop) -> None:
    session = await shop.create(TRAINING)
    assert session["status"] == "ready_for_payment" and "tax" not in amounts(session["totals"])
    notes = [m["content"] for m in session["messages"] if m["type"] == "info"]
    assert any("once fulfillment_details.address is given" in note for note in notes)
    austria = await with_address(shop, session, "at")  # the country code's case does not matter
    _, tax = vat(shop, "AT", 69_000)
    assert amounts(austria["totals"])["tax"] == tax == 13_800
    assert amounts(austria["totals"])["total"] == 69_000 + 13_800
