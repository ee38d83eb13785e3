"""How a session's lines are delivered (ACP fulfillment options) and what a session still needs
before it can be paid. Trainings and consulting packages are delivered digitally (confirmation and
joining details by e-mail); hardware is shipped to the fulfillment address after its lead time;
consulting packages with ``booking_days`` are booked for a date range (booking.py).

``booked`` maps the items that need a booking to their working days; ``bookings`` (in the cart) maps
a booked item to its first day (ISO date)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from agent_server.commerce import booking
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


def way_of(line: dict[str, Any], booked: dict[str, int] | None = None) -> str:
    if line["product_id"] in (booked or {}):
        return "local_delivery"
    return "shipping" if line["category"] in SHIPPED_KINDS else "digital"


def booking_of(cart: dict[str, Any], item_id: str, booked: dict[str, int]) -> booking.Booking | None:
    start = (cart.get("bookings") or {}).get(item_id)
    if start is None or item_id not in booked:
        return None
    return booking.Booking(item_id, date.fromisoformat(start), booked[item_id])


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


def options(
    lines: list[dict[str, Any]],
    lead_weeks: dict[str, int],
    start: datetime,
    *,
    cart: dict[str, Any] | None = None,
    booked: dict[str, int] | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    booked, cart = booked or {}, cart or {}
    ways = {way_of(line, booked) for line in lines}
    found = [DIGITAL] if "digital" in ways or not lines else []
    if "shipping" in ways:
        weeks = max(lead_weeks.get(line["product_id"], 0) for line in lines if way_of(line) == "shipping")
        found.append(shipping(weeks, start))
    for line in lines:
        if way_of(line, booked) == "local_delivery":
            chosen = booking_of(cart, line["product_id"], booked)
            found += booking.options(
                line["product_id"],
                booked[line["product_id"]],
                line["name"],
                now or start,
                chosen.start if chosen else None,
            )
    return found


def selected(
    lines: list[dict[str, Any]], cart: dict[str, Any] | None = None, booked: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """Digital and shipped lines go the one way their kind allows, so that selection is made for the
    buyer; a booked line shows its booking once one is chosen."""
    booked, cart = booked or {}, cart or {}
    chosen = []
    for way, option_id in (("digital", DIGITAL["id"]), ("shipping", SHIPPING_ID)):
        ids = [line["id"] for line in lines if way_of(line, booked) == way]
        if ids:
            chosen.append({"type": way, "option_id": option_id, "item_ids": ids})
    for line in lines:
        made = booking_of(cart, line["product_id"], booked)
        if made is not None:
            chosen.append({"type": "local_delivery", "option_id": made.option_id, "item_ids": [line["id"]]})
    return chosen


def with_bookings(
    lines: list[dict[str, Any]], cart: dict[str, Any], booked: dict[str, int]
) -> list[dict[str, Any]]:
    """The lines as the order keeps them: a booked line carries its range (``booking``)."""
    kept = []
    for line in lines:
        made = booking_of(cart, line["product_id"], booked)
        extra = {}
        if made is not None:
            extra = {"booking": {**made.window(), "days": made.days, "option_id": made.option_id}}
        kept.append({**line, **extra})
    return kept


def check_selection(
    chosen: list[dict[str, Any]], lines: list[dict[str, Any]], booked: dict[str, int] | None = None
) -> dict[str, str]:
    """A selection may only name the option each line's kind allows and this session's lines.
    Returns the bookings it makes (item id -> first day); their dates are judged on every read."""
    booked = booked or {}
    ways = {line["id"]: way_of(line, booked) for line in lines}
    products = {line["id"]: line["product_id"] for line in lines}
    made: dict[str, str] = {}
    for index, option in enumerate(chosen):
        param = f"$.selected_fulfillment_options[{index}]"
        if option["option_id"].startswith(booking.PREFIX):
            picked = booking.parse(option["option_id"], booked, f"{param}.option_id")
            wrong = sorted(item for item in option["item_ids"] if products.get(item) != picked.item_id)
            if option["type"] != "local_delivery" or wrong or not option["item_ids"]:
                raise ValidationFailed(
                    f"Booking options are of type 'local_delivery' and name the line 'li_{picked.item_id}' "
                    "of this session.",
                    code="invalid",
                    param=f"{param}.item_ids",
                )
            made[picked.item_id] = picked.start.isoformat()
            continue
        way = {DIGITAL["id"]: "digital", SHIPPING_ID: "shipping"}.get(option["option_id"])
        if way is None or option["type"] != way:
            raise ValidationFailed(
                f"Unknown fulfillment option; offered: '{DIGITAL['id']}' (digital), for hardware "
                f"'{SHIPPING_ID}' (shipping), for booked consulting '{booking.PREFIX}<item id>:<YYYY-MM-DD>' "
                "(local_delivery).",
                code="invalid_fulfillment_option",
                param=f"{param}.option_id",
            )
        wrong = sorted(item for item in option["item_ids"] if ways.get(item) != way)
        if wrong:
            raise ValidationFailed(
                f"Line item '{wrong[0]}' is not in this session or not delivered by {way}.",
                code="invalid",
                param=f"{param}.item_ids",
            )
    return made


def destination_country(cart: dict[str, Any]) -> str | None:
    """Where the goods go, for VAT: the fulfillment address's country (ISO 3166-1 alpha-2). ACP carries
    no buyer or billing address before payment, so a cart without one has no destination yet."""
    address = (cart.get("fulfillment_details") or {}).get("address") or {}
    country = str(address.get("country") or "").strip().upper()
    return country or None


def buyer_email(cart: dict[str, Any]) -> str | None:
    """Where the confirmation goes: the buyer's address, else the fulfillment contact's."""
    return (cart.get("buyer") or {}).get("email") or (cart.get("fulfillment_details") or {}).get("email")


def missing(
    cart: dict[str, Any],
    lines: list[dict[str, Any]],
    booked: dict[str, int] | None = None,
    now: datetime | None = None,
) -> list[tuple[str, str, str]]:
    """What the session lacks before payment, as (ACP message code, JSONPath, what to send)."""
    booked = booked or {}
    found = []
    if not buyer_email(cart):
        found.append(
            ("missing", "$.buyer.email", "An e-mail address for the confirmation is needed (buyer.email).")
        )
    if any(way_of(line) == "shipping" for line in lines) and not (cart.get("fulfillment_details") or {}).get(
        "address"
    ):
        found.append(
            (
                "missing",
                "$.fulfillment_details.address",
                "Hardware is shipped: send fulfillment_details.address.",
            )
        )
    for line in lines:
        if way_of(line, booked) != "local_delivery":
            continue
        made = booking_of(cart, line["product_id"], booked)
        if made is None:
            found.append(
                (
                    "missing",
                    "$.selected_fulfillment_options",
                    f"{line['name']} takes {booked[line['product_id']]} working days with your team: book a "
                    f"date range by selecting one of its local_delivery options "
                    f"('{booking.PREFIX}{line['product_id']}:<YYYY-MM-DD>').",
                )
            )
        elif now is not None and (problem := made.problem(now)) is not None:
            found.append(
                (
                    "invalid",
                    "$.selected_fulfillment_options",
                    f"{line['name']}: {problem} Select another start.",
                )
            )
    return found
