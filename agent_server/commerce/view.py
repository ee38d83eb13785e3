"""Checkout sessions and orders as ACP 2026-04-17 writes them (``CheckoutSession``,
``CheckoutSessionWithOrder``, ``Order``): built from the stored cart and today's prices."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_server.commerce.fulfillment import missing, options, selected
from agent_server.commerce.offer import Offer
from agent_server.commerce.tables import CheckoutSessionRecord, CommerceOrderRecord
from agent_server.foundation.timeutil import iso

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


def messages(record: CheckoutSessionRecord, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cart, found = record.cart, []
    if record.status in OPEN:
        for param, text in missing(cart, lines):
            found.append(
                message("error", text, code="missing", param=param, resolution="requires_buyer_input")
            )
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
    found.append(message("info", "Prices exclude VAT; delivery is included."))
    return found


def session_view(
    record: CheckoutSessionRecord,
    offer: Offer,
    handlers: list[dict[str, Any]],
    links: list[dict[str, Any]],
    order: dict[str, Any] | None = None,
) -> dict[str, Any]:
    cart = record.cart
    lines = offer.line_items(cart["items"])
    view: dict[str, Any] = {
        "id": record.id,
        "protocol": {"version": ACP_VERSION},
        "capabilities": {"payment": {"handlers": handlers}},
        "status": record.status,
        "currency": record.currency,
        "line_items": lines,
        "fulfillment_options": options(lines, offer.lead_weeks, _aware(record.created_at)),
        "selected_fulfillment_options": selected(lines),
        "totals": offer.totals(lines, record.currency),
        "messages": messages(record, lines),
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


def order_view(order: CommerceOrderRecord, permalink: str) -> dict[str, Any]:
    fulfilled = order.status == "completed"
    return {
        "id": order.id,
        "checkout_session_id": order.checkout_session_id,
        "permalink_url": permalink,
        "order_number": order.id.removeprefix("acpord_")[:12].upper(),
        "status": order.status,
        "line_items": [
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
                "subtotal": line["unit_amount"] * line["quantity"],
                "status": "fulfilled"
                if fulfilled
                else ("removed" if order.status == "canceled" else "processing"),
            }
            for line in order.lines
        ],
        "totals": [
            {"type": "subtotal", "display_text": "Subtotal", "amount": order.amount_minor},
            {"type": "total", "display_text": "Total", "amount": order.amount_minor},
            *(
                [{"type": "amount_refunded", "display_text": "Refunded", "amount": order.refunded_minor}]
                if order.refund_ref
                else []
            ),
        ],
        **({"adjustments": [_refund(order)]} if order.refund_ref else {}),
    }


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
