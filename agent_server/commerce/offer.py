"""What a checkout session sells and what it costs: billing's price book (``billing.pricebook``, the
one source of prices: the people's checkout sells its trainings and fixed-fee packages at the same
prices, tenants its hardware at list price), as ACP line items and totals in minor units.
Open-scope consulting is quoted after the discovery call, as on the site; workspace seats belong to
a tenant and are not sold here.

Prices exclude VAT (as everywhere on the site); VAT comes on top, per line, at the rate of the
session's destination country (the price book's tax table, ``tax.yaml``): total = subtotal +
fulfillment + tax. Each line's tax is rounded half up in minor units; the cart's is their sum."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from agent_server.billing.money import decimal_text
from agent_server.billing.pricebook import MAX_QUANTITY, PriceBook
from agent_server.commerce.fulfillment import destination_country
from agent_server.foundation.errors import ValidationFailed
from agent_server.knowledge.pack import ContentPack
from agent_server.knowledge.pack_legal import TaxRate

SOLD_KINDS = ("consulting", "training", "hardware")


@dataclass(frozen=True)
class Priced:
    """One catalogue entry at its price in minor units."""

    id: str
    kind: str  # consulting | training | hardware
    name: str
    unit_minor: int
    currency: str  # upper case, as the content pack writes it


def total(kind: str, text: str, amount: int) -> dict[str, Any]:
    return {"type": kind, "display_text": text, "amount": amount}


def amount_of(totals: list[dict[str, Any]], kind: str) -> int:
    return sum(entry["amount"] for entry in totals if entry["type"] == kind)


def tax_total(rate: TaxRate, amount: int) -> dict[str, Any]:
    """A ``tax`` total with its one-line breakdown (jurisdiction and rate as the spec writes them)."""
    return {
        **total("tax", f"{rate.name} {rate.percent}", amount),
        "breakdown": [{"jurisdiction": rate.name, "rate": float(rate.rate), "amount": amount}],
    }


class Offer:
    def __init__(self, pack: ContentPack) -> None:
        book = PriceBook(pack)
        self.items = {
            item.id: Priced(item.id, item.kind, item.name, item.unit_minor, item.currency.upper())
            for item in book.items.values()
            if item.kind in SOLD_KINDS
        }
        self.quoted = set(book.quoted)
        self.tax = book.tax
        self.lead_weeks = {h.id: h.lead_time_weeks for h in pack.hardware}
        # Packages that take the buyer's team's time: booked for a date range (booking.py).
        self.booking_days = {
            c.id: c.booking_days for c in pack.consulting if c.booking_days and c.id in self.items
        }
        self.currencies = sorted({p.currency.lower() for p in self.items.values()})

    def cart_items(self, requested: list[dict[str, Any]], currency: str) -> list[dict[str, Any]]:
        """The request's ``line_items`` (ACP ``Item``s, one unit each) as ``[{id, quantity}]``: the
        same id twice is two units. Unknown, quoted or foreign-currency items are refused by index."""
        quantities: dict[str, int] = {}
        for index, item in enumerate(requested):
            item_id, where = item["id"], f"$.line_items[{index}].id"
            priced = self.items.get(item_id)
            if priced is None:
                if item_id in self.quoted:
                    raise ValidationFailed(
                        f"'{item_id}' is quoted individually and cannot be bought online; book the free "
                        "discovery call (/api/discovery-call.json).",
                        code="not_purchasable",
                        param=where,
                    )
                known = ", ".join(sorted(self.items))
                raise ValidationFailed(
                    f"The item ID '{item_id}' does not exist. Purchasable items: {known}.",
                    code="invalid_item_id",
                    param=where,
                )
            if priced.currency.lower() != currency:
                raise ValidationFailed(
                    f"'{item_id}' is sold in {priced.currency.lower()}; send currency "
                    f"'{priced.currency.lower()}'.",
                    code="unsupported_currency",
                    param="$.currency",
                )
            if item.get("unit_amount") is not None and item["unit_amount"] != priced.unit_minor:
                raise ValidationFailed(
                    f"'{item_id}' costs {priced.unit_minor} (minor units), not {item['unit_amount']}.",
                    code="price_mismatch",
                    param=f"$.line_items[{index}].unit_amount",
                )
            quantities[item_id] = quantities.get(item_id, 0) + 1
        for item_id, quantity in quantities.items():
            limit = MAX_QUANTITY[self.items[item_id].kind]  # as billing's checkouts
            if quantity > limit:
                raise ValidationFailed(
                    f"'{item_id}' can be bought at most {limit} time(s) per order.",
                    code="quantity_exceeded",
                    param="$.line_items",
                )
        return [{"id": item_id, "quantity": quantity} for item_id, quantity in quantities.items()]

    def tax_rate(self, cart: dict[str, Any]) -> TaxRate | None:
        """The VAT of the session's destination; None: no country yet, or one outside the table."""
        return self.tax.of(destination_country(cart))

    def lines(self, cart: dict[str, Any]) -> list[dict[str, Any]]:
        """The cart's ACP line items at today's prices, taxed for its destination."""
        return self.line_items(cart["items"], self.tax_rate(cart))

    def line_items(
        self, cart_items: list[dict[str, Any]], rate: TaxRate | None = None
    ) -> list[dict[str, Any]]:
        lines = []
        for entry in cart_items:
            priced = self.items.get(entry["id"])
            if priced is None:  # withdrawn from the content pack since the session began
                continue
            amount = priced.unit_minor * entry["quantity"]
            tax = _tax(amount, rate)
            totals = [
                total("items_base_amount", "Base amount", amount),
                total("subtotal", "Subtotal", amount),
            ]
            if rate is not None:
                totals.append(tax_total(rate, tax))
            lines.append(
                {
                    "id": f"li_{priced.id}",
                    "item": {"id": priced.id, "name": priced.name, "unit_amount": priced.unit_minor},
                    "quantity": entry["quantity"],
                    "name": priced.name,
                    "product_id": priced.id,
                    "category": priced.kind,
                    "unit_amount": priced.unit_minor,
                    "totals": [*totals, total("total", "Total", amount + tax)],
                }
            )
        return lines

    @staticmethod
    def totals(
        lines: list[dict[str, Any]], currency: str, rate: TaxRate | None = None
    ) -> list[dict[str, Any]]:
        """Delivery is included (digital, or freight for hardware), so it adds nothing and bears no tax."""
        subtotal = sum(amount_of(line["totals"], "subtotal") for line in lines)
        tax = sum(amount_of(line["totals"], "tax") for line in lines)
        amount = subtotal + tax
        if rate is None:
            text = f"{decimal_text(amount, currency)} {currency.upper()} (excl. VAT)"
        else:
            text = f"{decimal_text(amount, currency)} {currency.upper()} incl. {decimal_text(tax, currency)} {rate.name}"
        return [
            total("items_base_amount", "Item(s) total", subtotal),
            total("subtotal", "Subtotal", subtotal),
            total("fulfillment", "Delivery (included)", 0),
            *([tax_total(rate, tax)] if rate is not None else []),
            {**total("total", "Total", amount), "description": text},
        ]

    @staticmethod
    def amount(lines: list[dict[str, Any]]) -> int:
        """What is charged: every line's total, tax included."""
        return sum(amount_of(line["totals"], "total") for line in lines)


def _tax(amount: int, rate: TaxRate | None) -> int:
    if rate is None:
        return 0
    return int((Decimal(amount) * rate.rate).quantize(Decimal(1), rounding=ROUND_HALF_UP))
