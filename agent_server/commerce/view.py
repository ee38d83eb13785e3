"""Checkout sessions and orders as ACP 2026-04-17 writes them (``CheckoutSession``,
``CheckoutSessionWithOrder``, ``Order``): built from the stored cart and today's prices."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_server.commerce.fulfillment import destination_country, missing, options, selected
from agent_server.commerce.offer import Offer
from agent_server.commerce.tables import CheckoutSessionRecord, CommerceOrderRecord
from agent_server.foundation.timeutil import iso
from agent_server.knowledge.pack_legal import TaxRate

ACP_VERSION = "2026-04-17"
OPEN = ("not_ready_for_payment", "ready_for_payment", "authentication_required")
# Sandbox 3-D Secure: what the agent's authentication flow needs (AuthenticationMetadata).
SANDBOX_3DS = {
    "acquirer_details": {
        "acquirer_bin": "400000",
        "acquirer_country": "DE",
        "acquirer_merchant_id": "sandbox_merchant",
        "merchant_name": "agentgate sandbox",
    },
    "directory_server": "visa",
    "flow_preference": {"type": "challenge", "challenge": {"type": "preferred"}},
}


def message(kind: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "content_type": "plain", "content": content, **fields}


def vat_note(cart: dict[str, Any], rate: TaxRate | None) -> str:
    """Prices exclude VAT, as on the site; say what the session adds and why."""
    country = destination_country(cart)
    if rate is not None:
        return f"Prices exclude VAT; {rate.name} at {rate.percent} is added for delivery to {country}."
    if country is None:
        return (
            "Prices exclude VAT; VAT is added for the destination country once "
            "fulfillment_details.address is given."
        )
    return f"Prices exclude VAT; no VAT is charged for delivery to {country}."


def messages(
    record: CheckoutSessionRecord, lines: list[dict[str, Any]], offer: Offer, now: datetime
) -> list[dict[str, Any]]:
    cart, found = record.cart, []
    if record.status in OPEN:
        for code, param, text in missing(cart, lines, offer.booking_days, now):
            found.append(message("error", text, code=code, param=param, resolution="requires_buyer_input"))
    if cart.get("declined") and record.status == "ready_for_payment":
        found.append(
            message(
                "error",
                "The payment was declined. Please try a different payment method.",
                code="payment_declined",
                resolution="requires_buyer_input",
            )
        )
    if record.status == "expired":
        found.append(message("info", "This checkout session expired; start a new one."))
    if record.status == "canceled":
        found.append(message("info", "Checkout session has been canceled."))
    found.append(message("info", vat_note(cart, offer.tax_rate(cart)) + " Delivery is included."))
    return found


def session_view(
    record: CheckoutSessionRecord,
    offer: Offer,
    handlers: list[dict[str, Any]],
    links: list[dict[str, Any]],
    order: dict[str, Any] | None = None,
    *,
    now: datetime,
) -> dict[str, Any]:
    cart = record.cart
    lines = offer.lines(cart)
    view: dict[str, Any] = {
        "id": record.id,
        "protocol": {"version": ACP_VERSION},
        "capabilities": {"payment": {"handlers": handlers}},
        "status": record.status,
        "currency": record.currency,
        "line_items": lines,
        "fulfillment_options": options(
            lines, offer.lead_weeks, _aware(record.created_at), cart=cart, booked=offer.booking_days, now=now
        ),
        "selected_fulfillment_options": selected(lines, cart, offer.booking_days),
        "totals": offer.totals(lines, record.currency, offer.tax_rate(cart)),
        "messages": messages(record, lines, offer, now),
        "links": links,
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "expires_at": iso(record.expires_at),
    }
    for field in ("buyer", "fulfillment_details", "locale", "timezone", "metadata"):
        if cart.get(field) is not None:
            view[field] = cart[field]
    if record.status == "authentication_required":
        view["authentication_metadata"] = SANDBOX_3DS
    if order is not None:
        view["order"] = order
    return view


def _aware(moment: datetime) -> datetime:
    """SQLite gives times back naive; they are UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def order_line(line: dict[str, Any]) -> dict[str, Any]:
    """What an order keeps of a session's line: ids, price, quantity and its tax (``None``: untaxed)."""
    kept = {k: line[k] for k in ("id", "name", "product_id", "unit_amount", "quantity")}
    tax = next((entry for entry in line["totals"] if entry["type"] == "tax"), None)
    kept["tax"] = None if tax is None else {"display_text": tax["display_text"], **tax["breakdown"][0]}
    if "booking" in line:  # {start, end, days, option_id} of a booked consulting package
        kept["booking"] = line["booking"]
    return kept


def _line_totals(line: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """An order line's subtotal and its totals (subtotal, tax if any, total)."""
    subtotal = line["unit_amount"] * line["quantity"]
    tax = line.get("tax")  # orders written before tax lines have none
    found = [{"type": "subtotal", "display_text": "Subtotal", "amount": subtotal}]
    if tax:
        found.append(_order_tax(tax["display_text"], tax["jurisdiction"], tax["rate"], tax["amount"]))
    found.append(
        {"type": "total", "display_text": "Total", "amount": subtotal + (tax or {}).get("amount", 0)}
    )
    return subtotal, found


def _order_tax(text: str, jurisdiction: str, rate: float, amount: int) -> dict[str, Any]:
    return {
        "type": "tax",
        "display_text": text,
        "amount": amount,
        "breakdown": [{"jurisdiction": jurisdiction, "rate": rate, "amount": amount}],
    }


def order_view(order: CommerceOrderRecord, permalink: str) -> dict[str, Any]:
    fulfilled = order.status == "completed"
    lines = []
    for line in order.lines:
        subtotal, totals = _line_totals(line)
        lines.append(
            {
                "id": line["id"],
                "title": line["name"],
                "product_id": line["product_id"],
                "quantity": {
                    "ordered": line["quantity"],
                    "current": 0 if order.status == "canceled" else line["quantity"],
                    "fulfilled": line["quantity"] if fulfilled else 0,
                },
                "unit_price": line["unit_amount"],
                "subtotal": subtotal,
                "totals": totals,
                **({"description": _booked_text(line["booking"])} if line.get("booking") else {}),
                "status": "fulfilled"
                if fulfilled
                else ("removed" if order.status == "canceled" else "processing"),
            }
        )
    taxes = [line["tax"] for line in order.lines if line.get("tax")]
    tax_totals = []
    if taxes:  # one destination per session, so one jurisdiction
        first, amount = taxes[0], sum(tax["amount"] for tax in taxes)
        tax_totals.append(_order_tax(first["display_text"], first["jurisdiction"], first["rate"], amount))
    return {
        "id": order.id,
        "checkout_session_id": order.checkout_session_id,
        "permalink_url": permalink,
        "order_number": order.id.removeprefix("acpord_")[:12].upper(),
        "status": order.status,
        "line_items": lines,
        "totals": [
            {
                "type": "subtotal",
                "display_text": "Subtotal",
                "amount": sum(line["subtotal"] for line in lines),
            },
            *tax_totals,
            {"type": "total", "display_text": "Total", "amount": order.amount_minor},
            *(
                [{"type": "amount_refunded", "display_text": "Refunded", "amount": order.refunded_minor}]
                if order.refund_ref
                else []
            ),
        ],
        **({"adjustments": [_refund(order)]} if order.refund_ref else {}),
        **({"fulfillments": booked} if (booked := _bookings(order)) else {}),
    }


def _booked_text(made: dict[str, Any]) -> str:
    return f"Booked from {made['start']} to {made['end']} ({made['days']} working days)."


def _bookings(order: CommerceOrderRecord) -> list[dict[str, Any]]:
    """Each booked consulting package as a fulfillment whose estimated delivery is the booked range
    (ACP's ``Fulfillment`` knows shipping, pickup and digital: the engagement's results are digital)."""
    status = {"completed": "delivered", "canceled": "canceled"}.get(order.status, "pending")
    return [
        {
            "id": f"ful_{line['id']}",
            "type": "digital",
            "status": status,
            "line_items": [{"id": line["id"], "quantity": line["quantity"]}],
            "estimated_delivery": {"earliest": line["booking"]["start"], "latest": line["booking"]["end"]},
            "description": _booked_text(line["booking"]),
        }
        for line in order.lines
        if line.get("booking")
    ]


def _refund(order: CommerceOrderRecord) -> dict[str, Any]:
    assert order.refunded_at is not None and order.refund_ref is not None
    return {
        "id": order.refund_ref,
        "type": "refund",
        "occurred_at": iso(order.refunded_at),
        "status": "completed",
        "amount": order.refunded_minor,
        "currency": order.currency,
        "reason": "Refunded by the seller.",
    }
