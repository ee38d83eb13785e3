"""How a session's lines are delivered (ACP fulfillment options) and what a session still needs
before it can be paid. Trainings and consulting packages are delivered digitally (confirmation and
joining details by e-mail); hardware is shipped to the fulfillment address after its lead time."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import iso

DIGITAL = {
    "type": "digital",
    "id": "digital_email",
    "title": "Digital delivery",
    "description": "Booking confirmation, joining details and materials by e-mail.",
    "totals": [{"type": "total", "display_text": "Free", "amount": 0}],
}
SHIPPING_ID = "shipping_freight"
SHIPPED_KINDS = ("hardware",)


def way_of(line: dict[str, Any]) -> str:
    return "shipping" if line["category"] in SHIPPED_KINDS else "digital"


def shipping(lead_weeks: int, start: datetime) -> dict[str, Any]:
    """Freight to the fulfillment address, included in the price; arrives after the lead time."""
    return {
        "type": "shipping",
        "id": SHIPPING_ID,
        "title": "Freight delivery",
        "description": f"Shipped and installed after a lead time of about {lead_weeks} weeks; included.",
        "carrier": "Freight forwarder",
        "earliest_delivery_time": iso(start + timedelta(weeks=lead_weeks)),
        "latest_delivery_time": iso(start + timedelta(weeks=lead_weeks + 2)),
        "totals": [{"type": "total", "display_text": "Included", "amount": 0}],
    }


def options(lines: list[dict[str, Any]], lead_weeks: dict[str, int], start: datetime) -> list[dict[str, Any]]:
    ways = {way_of(line) for line in lines}
    found = [DIGITAL] if "digital" in ways or not lines else []
    if "shipping" in ways:
        weeks = max(lead_weeks.get(line["product_id"], 0) for line in lines if way_of(line) == "shipping")
        found.append(shipping(weeks, start))
    return found


def selected(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each line goes the one way its kind allows, so the selection is made for the buyer."""
    chosen = []
    for way, option_id in (("digital", DIGITAL["id"]), ("shipping", SHIPPING_ID)):
        ids = [line["id"] for line in lines if way_of(line) == way]
        if ids:
            chosen.append({"type": way, "option_id": option_id, "item_ids": ids})
    return chosen


def check_selection(chosen: list[dict[str, Any]], lines: list[dict[str, Any]]) -> None:
    """A selection may only name the option each line's kind allows and this session's lines."""
    ways = {line["id"]: way_of(line) for line in lines}
    for index, option in enumerate(chosen):
        way = {DIGITAL["id"]: "digital", SHIPPING_ID: "shipping"}.get(option["option_id"])
        if way is None or option["type"] != way:
            raise ValidationFailed(
                f"Unknown fulfillment option; offered: '{DIGITAL['id']}' (digital) and, for hardware, "
                f"'{SHIPPING_ID}' (shipping).",
                code="invalid_fulfillment_option",
                param=f"$.selected_fulfillment_options[{index}].option_id",
            )
        wrong = sorted(item for item in option["item_ids"] if ways.get(item) != way)
        if wrong:
            raise ValidationFailed(
                f"Line item '{wrong[0]}' is not in this session or not delivered by {way}.",
                code="invalid",
                param=f"$.selected_fulfillment_options[{index}].item_ids",
            )


def destination_country(cart: dict[str, Any]) -> str | None:
    """Where the goods go, for VAT: the fulfillment address's country (ISO 3166-1 alpha-2). ACP carries
    no buyer or billing address before payment, so a cart without one has no destination yet."""
    address = (cart.get("fulfillment_details") or {}).get("address") or {}
    country = str(address.get("country") or "").strip().upper()
    return country or None


def buyer_email(cart: dict[str, Any]) -> str | None:
    """Where the confirmation goes: the buyer's address, else the fulfillment contact's."""
    return (cart.get("buyer") or {}).get("email") or (cart.get("fulfillment_details") or {}).get("email")


def missing(cart: dict[str, Any], lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What the session lacks before payment, as (JSONPath, what to send)."""
    found = []
    if not buyer_email(cart):
        found.append(("$.buyer.email", "An e-mail address for the confirmation is needed (buyer.email)."))
    if any(way_of(line) == "shipping" for line in lines) and not (cart.get("fulfillment_details") or {}).get(
        "address"
    ):
        found.append(
            ("$.fulfillment_details.address", "Hardware is shipped: send fulfillment_details.address.")
        )
    return found
