"""The sandbox provider's money: subscriptions, invoices, payments and renewals, deterministic.

Cards are the provider's test numbers with the sandbox's own meaning (docs/billing.md, "Sandbox"):
4242 4242 4242 4242 always pays, 4000 0000 0000 0002 is declined at checkout, and
4000 0000 0000 0341 pays at checkout and declines every later charge (to try a failed renewal).
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime
from typing import Any

from agent_server.billing.sandbox.events import SandboxEvents
from agent_server.billing.sandbox.store import SandboxStore, new_id

CARDS = {"4242424242424242": "pays", "4000000000000002": "declined", "4000000000000341": "renewals_fail"}
RENEWING = ("active", "past_due", "trialing")


def add_month(timestamp: int) -> int:
    """The same day and time one calendar month later (the 31st becomes the month's last day)."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return int(moment.replace(year=year, month=month, day=day).timestamp())


def line(amount: int, currency: str, description: str, start: int, end: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": new_id("invoiceitem").replace("ii_", "il_"),
        "object": "line_item",
        "amount": amount,
        "currency": currency,
        "description": description,
        "period": {"start": start, "end": end},
        "quantity": 1,
        **extra,
    }


class SandboxBilling:
    def __init__(self, store: SandboxStore, events: SandboxEvents) -> None:
        self.store, self.events = store, events

    async def card(self, customer_id: str) -> dict[str, Any] | None:
        customer = await self.store.get("customer", customer_id)
        default = ((customer or {}).get("invoice_settings") or {}).get("default_payment_method")
        return await self.store.get("payment_method", default) if default else None

    async def attach_card(self, customer: dict[str, Any], number: str) -> dict[str, Any]:
        card = {"brand": "visa", "last4": number[-4:], "exp_month": 12, "exp_year": 2030, "funding": "credit"}
        method, _ = await self.store.add(
            "payment_method",
            {"type": "card", "card": card, "customer": customer["id"], "outcome": CARDS[number]},
            owner=customer["id"],
        )
        customer["invoice_settings"] = {"default_payment_method": method["id"]}
        await self.store.save(customer)
        await self.events.emit("payment_method.attached", method)  # the card on file changed
        return method

    async def subscribe(
        self,
        customer_id: str,
        price: dict[str, Any],
        metadata: dict[str, str],
        trial_end: int | None = None,
    ) -> dict[str, Any]:
        """An active subscription billed at once: its first invoice is created and paid. With a
        ``trial_end`` still ahead, as at Stripe: ``trialing`` until then, with an invoice of 0 now; the
        first charge is the invoice of the period that starts at the trial's end (``renew_due``)."""
        start = int(self.store.clock.now())
        trialing = trial_end is not None and trial_end > start
        end = trial_end if trialing and trial_end is not None else add_month(start)
        item = {
            "id": new_id("invoiceitem").replace("ii_", "si_"),
            "object": "subscription_item",
            "price": price,
        }
        item.update(plan=price, quantity=1, current_period_start=start, current_period_end=end)
        subscription, _ = await self.store.add(
            "subscription",
            {
                "customer": customer_id,
                "status": "trialing" if trialing else "active",
                "cancel_at_period_end": False,
                "canceled_at": None,
                "ended_at": None,
                "start_date": start,
                "current_period_start": start,
                "current_period_end": end,
                "trial_start": start if trialing else None,
                "trial_end": end if trialing else None,
                "metadata": metadata,
                "items": {"object": "list", "data": [item]},
                "latest_invoice": None,
            },
            owner=customer_id,
        )
        await self.events.emit("customer.subscription.created", subscription)
        await self.invoice(subscription, "subscription_create", trial=trialing)
        return subscription

    async def invoice(
        self, subscription: dict[str, Any], reason: str, *, trial: bool = False
    ) -> dict[str, Any]:
        """Invoice the subscription's current period plus the customer's pending items, and charge it;
        a trial period's line is 0."""
        price = subscription["items"]["data"][0]["price"]
        start, end = subscription["current_period_start"], subscription["current_period_end"]
        if trial:
            lines = [line(0, price["currency"], f"Trial period for {price['nickname']}", start, end)]
        else:
            lines = [line(price["unit_amount"], price["currency"], price["nickname"], start, end)]
        for pending in await self.store.owned("invoiceitem", subscription["customer"]):
            if pending.get("invoice") is None:
                lines.append(line(pending["amount"], pending["currency"], pending["description"], start, end))
        invoice = await self.new_invoice(
            subscription["customer"], lines, price["currency"], reason, subscription
        )
        subscription["latest_invoice"] = invoice["id"]
        for pending in await self.store.owned("invoiceitem", subscription["customer"]):
            if pending.get("invoice") is None:
                await self.store.save({**pending, "invoice": invoice["id"]})
        await self.store.save(subscription)
        return await self.charge(invoice, renewal=reason != "subscription_create")

    async def new_invoice(
        self,
        customer_id: str,
        lines: list[dict[str, Any]],
        currency: str,
        reason: str,
        subscription: dict[str, Any] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        total = sum(entry["amount"] for entry in lines)
        body: dict[str, Any] = {
            "customer": customer_id,
            "subscription": subscription["id"] if subscription else None,
            "status": "open",
            "amount_due": total,
            "amount_paid": 0,
            "amount_remaining": total,
            "currency": currency,
            "billing_reason": reason,
            "period_start": lines[0]["period"]["start"] if lines else None,
            "period_end": lines[0]["period"]["end"] if lines else None,
            "hosted_invoice_url": None,
            "lines": {"object": "list", "data": lines},
            "metadata": metadata or {},
        }
        if subscription:
            details = {"subscription": subscription["id"], "metadata": subscription["metadata"]}
            body["parent"] = {"type": "subscription_details", "subscription_details": details}
        invoice, _ = await self.store.add("invoice", body, owner=customer_id)
        await self.events.emit("invoice.created", invoice)
        await self.events.emit("invoice.finalized", invoice)
        return invoice

    async def charge(self, invoice: dict[str, Any], *, renewal: bool = False) -> dict[str, Any]:
        """Pay an open invoice with the customer's card: paid, or left open with ``payment_failed``."""
        card = await self.card(invoice["customer"])
        declines = (
            card is None or card["outcome"] == "declined" or (renewal and card["outcome"] == "renewals_fail")
        )
        if invoice["amount_due"] > 0 and declines:
            invoice["attempt_count"] = invoice.get("attempt_count", 0) + 1
            await self.store.save(invoice)
            await self.events.emit("invoice.payment_failed", invoice)
            return invoice
        invoice.update(status="paid", amount_paid=invoice["amount_due"], amount_remaining=0)
        await self.store.save(invoice)
        await self.events.emit("invoice.paid", invoice)
        await self.events.emit("invoice.payment_succeeded", invoice)
        return invoice

    async def renew_due(self, now: int) -> int:
        """Close every subscription period that ended by ``now``; returns how many periods were closed."""
        closed = 0
        for subscription in await self.store.of_kind("subscription"):
            while (
                subscription["status"] in RENEWING
                and subscription["current_period_end"] <= now
                and closed < 1000
            ):
                await self.renew(subscription)
                closed += 1
        return closed

    async def renew(self, subscription: dict[str, Any]) -> None:
        previous = {
            "status": subscription["status"],
            "current_period_end": subscription["current_period_end"],
        }
        if subscription["cancel_at_period_end"]:
            subscription.update(status="canceled", ended_at=subscription["current_period_end"])
            subscription["canceled_at"] = subscription["ended_at"]
            await self.store.save(subscription)
            await self.events.emit("customer.subscription.deleted", subscription, previous)
            return
        start = subscription["current_period_end"]
        end = add_month(start)
        item = subscription["items"]["data"][0]
        item.update(current_period_start=start, current_period_end=end)
        subscription.update(current_period_start=start, current_period_end=end)
        invoice = await self.invoice(subscription, "subscription_cycle")
        subscription["status"] = "active" if invoice["status"] == "paid" else "past_due"
        await self.store.save(subscription)
        await self.events.emit("customer.subscription.updated", subscription, previous)
