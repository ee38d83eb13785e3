"""The sandbox payment provider: in-process, deterministic, no network, no charges (``make run``).

Its objects live in the database (store.py) with ``…_sbx_`` ids. A checkout's hosted page is
ours: ``GET /<segment>/sandbox/checkout/<ref>`` shows what is bought and ``POST`` confirms (with one
of the test cards of billing.py) or cancels; confirming sends the signed events the real
provider would (events.py). Subscriptions renew when ``advance`` finds their period over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_server.billing.port import (
    CustomerDetails,
    HostedSession,
    InvoiceInfo,
    Price,
    PriceRef,
    Subscription,
)
from agent_server.billing.provider_objects import subscription_of
from agent_server.billing.sandbox.billing import SandboxBilling
from agent_server.billing.sandbox.checkout import SandboxCheckouts
from agent_server.billing.sandbox.events import SandboxEvents, sandbox_secret
from agent_server.billing.sandbox.store import SandboxStore
from agent_server.billing.signing import verified_event
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound
from agent_server.storage.db import Database

PORTAL_SECONDS = 300


class SandboxProvider:
    name = "sandbox"

    def __init__(
        self, db: Database, clock: Clock, data_dir: Path, pages_url: str, *, tolerance: int = 300
    ) -> None:
        self.store = SandboxStore(db, clock)
        self.secret = sandbox_secret(data_dir)
        self.events = SandboxEvents(self.store, self.secret)
        self.billing = SandboxBilling(self.store, self.events)
        self.checkouts = SandboxCheckouts(self.store, self.billing, pages_url.rstrip("/"))
        self.pages_url, self.tolerance = pages_url.rstrip("/"), tolerance

    def _now(self) -> int:
        return int(self.store.clock.now())

    async def _required(self, kind: str, object_id: str) -> dict[str, Any]:
        found = await self.store.get(kind, object_id)
        if found is None:
            raise NotFound(f"No sandbox {kind.replace('_', ' ')} '{object_id}'.")
        return found

    # --- customers and prices -------------------------------------------------------------

    async def ensure_customer(
        self,
        tenant_id: str,
        email: str,
        name: str,
        existing: str | None,
        details: CustomerDetails | None = None,
    ) -> str:
        details = details or CustomerDetails()
        customer = await self.store.get("customer", existing) if existing else None
        if customer is None:
            fields = {
                "email": details.email or email,
                "name": details.name or name,
                "address": details.address,
            }
            fields["tax_ids"] = [details.tax_id] if details.tax_id else []
            customer, _ = await self.store.add(
                "customer", {**fields, "metadata": {"tenant_id": tenant_id}, "invoice_settings": {}}
            )
            return customer["id"]
        for field in ("email", "name", "address"):
            if getattr(details, field) is not None:
                customer[field] = getattr(details, field)
        if details.tax_id is not None:
            customer["tax_ids"] = [details.tax_id]
        await self.store.save(customer)
        return customer["id"]

    async def ensure_price(self, price: Price) -> PriceRef:
        """One price object per lookup key; a changed amount makes a new price that takes the key over."""
        found = await self.store.find("price", price.lookup_key)
        body = _price_body(price)
        if found is not None and all(found.get(k) == v for k, v in body.items()):
            return PriceRef(found["id"], created=False)
        if found is not None:
            await self.store.save(
                {**found, "lookup_key": None, "active": False}, lookup=None, keep_lookup=False
            )
        created, _ = await self.store.add("price", body, lookup=price.lookup_key)
        return PriceRef(created["id"], created=True)

    async def sync_price(self, price: Price) -> str:
        return (await self.ensure_price(price)).id

    async def _price(self, price: Price) -> dict[str, Any]:
        return await self._required("price", (await self.ensure_price(price)).id)

    # --- hosted pages ---------------------------------------------------------------------

    async def plan_checkout(
        self,
        customer_id: str,
        price: Price,
        plan_id: str,
        success_url: str,
        cancel_url: str,
        trial_end: int | None = None,
    ) -> HostedSession:
        stored = await self._price(price)
        return await self.checkouts.plan(
            customer_id, price, stored, plan_id, success_url, cancel_url, trial_end
        )

    async def one_off_checkout(
        self,
        customer_id: str | None,
        email: str,
        lines: list[tuple[Price, int]],
        reference: str,
        success_url: str,
        cancel_url: str,
    ) -> HostedSession:
        return await self.checkouts.one_off(customer_id, email, lines, reference, success_url, cancel_url)

    async def checkout_session(self, ref: str) -> dict[str, Any]:
        return await self.checkouts.session(ref)

    async def session_result(self, ref: str) -> dict[str, Any]:
        return await self.checkouts.result(ref)

    async def confirm(self, ref: str, card_number: str) -> dict[str, Any]:
        return await self.checkouts.confirm(ref, card_number)

    async def portal(self, customer_id: str, return_url: str) -> HostedSession:
        session, _ = await self.store.add(
            "portal_session",
            {"customer": customer_id, "return_url": return_url, "expires_at": self._now() + PORTAL_SECONDS},
            owner=customer_id,
        )
        return HostedSession(session["id"], f"{self.pages_url}/portal/{session['id']}", PORTAL_SECONDS)

    # --- subscriptions, invoices ----------------------------------------------------------

    async def subscription(self, subscription_id: str) -> Subscription:
        return subscription_of(await self._required("subscription", subscription_id))

    async def change_plan(
        self, subscription_id: str, price: Price, plan_id: str, prorate: bool
    ) -> Subscription:
        subscription = await self._required("subscription", subscription_id)
        stored = await self._price(price)
        item = subscription["items"]["data"][0]
        old, now = item["price"], self._now()
        previous = {"items": {"data": [dict(item)]}, "metadata": dict(subscription["metadata"])}
        start, end = subscription["current_period_start"], subscription["current_period_end"]
        if prorate and end > now and subscription["status"] != "trialing":  # a trial costs nothing
            left, length = end - now, end - start
            for amount, text in (
                (-(old["unit_amount"] * left // length), f"Unused time on {old['nickname']}"),
                (stored["unit_amount"] * left // length, f"Remaining time on {stored['nickname']}"),
            ):
                await self.add_invoice_item(subscription["customer"], amount, stored["currency"], text, None)
        item.update(price=stored, plan=stored)
        subscription["metadata"] = {**subscription["metadata"], "plan_id": plan_id}
        await self.store.save(subscription)
        await self.events.emit("customer.subscription.updated", subscription, previous)
        return subscription_of(subscription)

    async def cancel(self, subscription_id: str, at_period_end: bool) -> Subscription:
        subscription = await self._required("subscription", subscription_id)
        previous = {
            "status": subscription["status"],
            "cancel_at_period_end": subscription["cancel_at_period_end"],
        }
        if at_period_end:
            subscription["cancel_at_period_end"] = True
            await self.store.save(subscription)
            await self.events.emit("customer.subscription.updated", subscription, previous)
        else:
            subscription.update(status="canceled", ended_at=self._now(), canceled_at=self._now())
            await self.store.save(subscription)
            await self.events.emit("customer.subscription.deleted", subscription, previous)
        return subscription_of(subscription)

    async def resume(self, subscription_id: str) -> Subscription:
        subscription = await self._required("subscription", subscription_id)
        if subscription["status"] == "canceled":
            raise Conflict(
                "A canceled subscription cannot be resumed; start a new checkout.", code="subscription_ended"
            )
        subscription["cancel_at_period_end"] = False
        await self.store.save(subscription)
        await self.events.emit("customer.subscription.updated", subscription, {"cancel_at_period_end": True})
        return subscription_of(subscription)

    async def invoices(self, customer_id: str, limit: int) -> list[InvoiceInfo]:
        return [_invoice_info(invoice) for invoice in await self.store.owned("invoice", customer_id, limit)]

    async def add_invoice_item(
        self,
        customer_id: str,
        amount_minor: int,
        currency: str,
        description: str,
        idempotency_key: str | None,
    ) -> str:
        """A pending item, billed with the customer's next invoice; one per idempotency key."""
        now = self._now()
        body = {
            "customer": customer_id,
            "amount": amount_minor,
            "currency": currency.lower(),
            "description": description,
            "invoice": None,
            "period": {"start": now, "end": now},
        }
        item, _ = await self.store.add("invoiceitem", body, lookup=idempotency_key, owner=customer_id)
        return item["id"]

    async def pay_open_invoices(self, customer_id: str, card_number: str) -> int:
        """The portal's "pay now" with a new card: open invoices paid, their subscriptions active again."""
        customer = await self._required("customer", customer_id)
        await self.billing.attach_card(customer, card_number)
        paid = 0
        for invoice in await self.store.owned("invoice", customer_id):
            if invoice["status"] == "open" and (await self.billing.charge(invoice))["status"] == "paid":
                paid += 1
                subscription = await self.store.get("subscription", invoice["subscription"] or "")
                if subscription and subscription["status"] == "past_due":
                    subscription["status"] = "active"
                    await self.store.save(subscription)
                    await self.events.emit(
                        "customer.subscription.updated", subscription, {"status": "past_due"}
                    )
        return paid

    async def payment_method(self, customer_id: str) -> dict[str, Any] | None:
        method = await self.billing.card(customer_id)
        if method is None:
            return None
        return {"type": "card", **{k: method["card"][k] for k in ("brand", "last4", "exp_month", "exp_year")}}

    async def advance(self) -> int:
        """Renew what is due by the clock (periods closed); run by the billing ticker and by tests."""
        return await self.billing.renew_due(self._now())

    def parse_event(self, payload: bytes, signature: str | None, now: int) -> dict[str, Any]:
        return verified_event(payload, signature, self.secret, now, self.tolerance)


def _price_body(price: Price) -> dict[str, Any]:
    return {
        "lookup_key": price.lookup_key,
        "nickname": price.product_name,
        "unit_amount": price.amount_minor,
        "currency": price.currency.lower(),
        "recurring": {"interval": price.interval} if price.interval else None,
        "type": "recurring" if price.interval else "one_time",
        "active": True,
        "metadata": {"lookup_key": price.lookup_key},
    }


def _invoice_info(invoice: dict[str, Any]) -> InvoiceInfo:
    return InvoiceInfo(
        id=invoice["id"],
        status=invoice["status"],
        amount_due_minor=invoice["amount_due"],
        amount_paid_minor=invoice["amount_paid"],
        currency=invoice["currency"].upper(),
        period_start=invoice["period_start"],
        period_end=invoice["period_end"],
        hosted_url=invoice["hosted_invoice_url"],
        created=invoice["created"],
        lines=invoice["lines"]["data"],
    )
