"""Reading the provider's objects (Stripe's shapes, which the sandbox adapter also emits) into our words.

Tolerant on purpose: Stripe moved fields between API versions (``current_period_*`` from the
subscription to its items; ``plan`` to ``price``), and localstripe speaks an older version, so each
value is looked for where any of them puts it. localstripe also leaves a subscription created with a
``trial_end`` ``incomplete`` with no invoice, where Stripe says ``trialing``: a subscription that is
``incomplete`` without any invoice but with a trial end is read as ``trialing`` (at Stripe an
``incomplete`` subscription always has the first invoice it waits for), and a trialing
subscription's current period ends with its trial, as at Stripe.
"""

from __future__ import annotations

from typing import Any

from agent_server.billing.port import Subscription


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def object_id(value: Any) -> str | None:
    """An id, or the id of an expanded object."""
    return _str(value) or _str(_dict(value).get("id"))


def _first_item(obj: dict[str, Any]) -> dict[str, Any]:
    data = _dict(obj.get("items")).get("data")
    return _dict(data[0]) if isinstance(data, list) and data else {}


def plan_from_key(key: str | None) -> str | None:
    """``plan:<id>:<interval>`` (our lookup keys) -> ``<id>``; any other spelling -> None."""
    if key and key.startswith("plan:") and key.count(":") == 2:
        return key.split(":")[1] or None
    return None


def plan_id_of(obj: dict[str, Any]) -> str | None:
    """Our plan id on a subscription: what its item is billed at (the price's or plan's metadata or
    lookup key) first, the subscription's own metadata last (a compatible server may not update it)."""
    item = _first_item(obj)
    billed = (_dict(item.get("price")), _dict(item.get("plan")), _dict(obj.get("plan")))
    for holder in billed:
        found = _str(_dict(holder.get("metadata")).get("plan_id"))
        found = (
            found or plan_from_key(_str(holder.get("lookup_key"))) or plan_from_key(_str(holder.get("id")))
        )
        if found:
            return found
    return _str(_dict(obj.get("metadata")).get("plan_id"))


def metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return _dict(obj.get("metadata"))


def _status(obj: dict[str, Any]) -> str:
    status = _str(obj.get("status")) or "incomplete"
    if status == "incomplete" and _int(obj.get("trial_end")) and not obj.get("latest_invoice"):
        return "trialing"
    return status


def subscription_of(obj: dict[str, Any]) -> Subscription:
    item = _first_item(obj)
    status, trial_end = _status(obj), _int(obj.get("trial_end"))
    period_end = _int(obj.get("current_period_end")) or _int(item.get("current_period_end"))
    return Subscription(
        id=object_id(obj.get("id")) or "",
        customer_id=object_id(obj.get("customer")) or "",
        status=status,
        plan_id=plan_id_of(obj),
        current_period_start=_int(obj.get("current_period_start")) or _int(item.get("current_period_start")),
        current_period_end=trial_end if status == "trialing" and trial_end else period_end,
        cancel_at_period_end=bool(obj.get("cancel_at_period_end")),
        trial_end=trial_end,
    )


def invoice_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The columns of our ``invoices`` row (amounts in integer minor units, currency upper case)."""
    lines = _dict(obj.get("lines")).get("data")
    first = _dict(lines[0]) if isinstance(lines, list) and lines else {}
    period = _dict(first.get("period"))
    return {
        "status": _str(obj.get("status")) or "draft",
        "amount_due_minor": _int(obj.get("amount_due")) or 0,
        "amount_paid_minor": _int(obj.get("amount_paid")) or 0,
        "currency": (_str(obj.get("currency")) or "eur").upper()[:3],
        "period_start": _int(obj.get("period_start")) or _int(period.get("start")),
        "period_end": _int(obj.get("period_end")) or _int(period.get("end")),
        "hosted_url": (_str(obj.get("hosted_invoice_url")) or "")[:500] or None,
        "created": _int(obj.get("created")),
    }


def subscription_of_invoice(obj: dict[str, Any]) -> str | None:
    """The subscription an invoice bills (top level in older API versions, under ``parent`` in newer)."""
    found = object_id(obj.get("subscription"))
    if found:
        return found
    details = _dict(_dict(obj.get("parent")).get("subscription_details"))
    return object_id(details.get("subscription"))


def card_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """{id, type, brand, last4, exp_month, exp_year} of a payment method: nothing secret."""
    card = _dict(obj.get("card"))
    if not card and not obj.get("type"):
        return None
    return {
        "id": object_id(obj.get("id")),
        "type": _str(obj.get("type")) or "card",
        "brand": _str(card.get("brand")),
        "last4": _str(card.get("last4")),
        "exp_month": _int(card.get("exp_month")),
        "exp_year": _int(card.get("exp_year")),
    }
