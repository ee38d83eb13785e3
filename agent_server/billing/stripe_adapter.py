"""The Stripe adapter: the official SDK's async client (``StripeClient`` over httpx).

Two dialects, chosen by ``AGENTGATE_STRIPE_API_BASE`` (docs/billing.md, "Stripe"):

- **Stripe itself** (no API base): Prices found by lookup key, plan and one-off checkout on hosted
  Checkout Sessions, the Billing Portal, ``proration_behavior``.
- **A Stripe-compatible server** (an API base: localstripe in the tests), which serves the older
  surface: recurring prices as Plans whose id carries the lookup key and amount, checkout as a
  SetupIntent or PaymentIntent the payer confirms on their own page (stripe_checkout.py),
  ``prorate``, no portal.

Every create carries an idempotency key; customers and subscriptions carry the tenant id in metadata.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent_server.billing.port import (
    CustomerDetails,
    HostedSession,
    InvoiceInfo,
    Price,
    PriceRef,
    Subscription,
)
from agent_server.billing.provider_objects import card_of, invoice_fields, subscription_of
from agent_server.billing.signing import verified_event
from agent_server.billing.stripe_calls import call, exists, idempotency, make_client, object_id
from agent_server.billing.stripe_checkout import StripeCheckouts
from agent_server.billing.stripe_hosted import billing_portal
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotImplementedYet


class StripeProvider:
    name = "stripe"

    def __init__(
        self,
        api_key: str,
        webhook_secret: str,
        clock: Clock,
        *,
        api_base: str | None = None,
        tolerance: int = 300,
    ) -> None:
        self.client = make_client(api_key, api_base)
        self.compatible = api_base is not None  # the older surface of a Stripe-compatible server
        self.checkouts = StripeCheckouts(self.client, clock, compatible=self.compatible)
        self.secret, self.tolerance = webhook_secret, tolerance

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
        fields = {k: v for k in ("email", "name", "address") if (v := getattr(details, k)) is not None}
        if existing:
            if fields:
                await call(self.client.v1.customers.update_async(existing, fields))
            if details.tax_id:
                await self._add_tax_id(existing, details.tax_id)
            return existing
        params: dict[str, Any] = {
            "email": email,
            "name": name,
            **fields,
            "metadata": {"tenant_id": tenant_id},
        }
        if details.tax_id:
            params["tax_id_data"] = [details.tax_id]
        customer = await call(
            self.client.v1.customers.create_async(params, idempotency("customer", tenant_id, params))
        )
        return customer["id"]

    async def _add_tax_id(self, customer_id: str, tax_id: dict[str, str]) -> None:
        known = await call(self.client.v1.customers.tax_ids.list_async(customer_id))
        if not any(t["type"] == tax_id["type"] and t["value"] == tax_id["value"] for t in known["data"]):
            await call(self.client.v1.customers.tax_ids.create_async(customer_id, dict(tax_id)))

    async def _product(self, price: Price) -> str:
        product_id = object_id(price.lookup_key)
        if not await exists(self.client.v1.products.retrieve_async(product_id)):
            params = {
                "id": product_id,
                "name": price.product_name,
                "metadata": {"lookup_key": price.lookup_key},
            }
            await call(self.client.v1.products.create_async(params, idempotency("product", params)))
        return product_id

    async def ensure_price(self, price: Price) -> PriceRef:
        metadata = {"lookup_key": price.lookup_key}
        if price.lookup_key.startswith("plan:"):
            metadata["plan_id"] = price.lookup_key.split(":")[1]
        if self.compatible:
            return await self._ensure_plan(price, metadata)
        found = await call(
            self.client.v1.prices.list_async({"lookup_keys": [price.lookup_key], "active": True})
        )
        wanted = (price.amount_minor, price.currency.lower(), price.interval)
        for existing in found["data"]:
            interval = (existing.get("recurring") or {}).get("interval")
            if (existing["unit_amount"], existing["currency"], interval) == wanted:
                return PriceRef(existing["id"], created=False)
        params: dict[str, Any] = {
            "product": await self._product(price),
            "unit_amount": price.amount_minor,
            "currency": price.currency.lower(),
            "lookup_key": price.lookup_key,
            "transfer_lookup_key": True,  # a changed amount takes the key over from the old price
            "nickname": price.product_name,
            "metadata": metadata,
        }
        if price.interval:
            params["recurring"] = {"interval": price.interval}
        created = await call(self.client.v1.prices.create_async(params, idempotency("price", params)))
        return PriceRef(created["id"], created=True)

    async def _ensure_plan(self, price: Price, metadata: dict[str, str]) -> PriceRef:
        """A Plan whose id is the lookup key and amount (a new amount is a new plan); one-off prices
        (the models' token prices) become metered monthly plans, the nearest the older surface has."""
        plan_id = object_id(f"{price.lookup_key}:{price.amount_minor}{price.currency.lower()}")
        if await exists(self.client.v1.plans.retrieve_async(plan_id)):
            return PriceRef(plan_id, created=False)
        params: dict[str, Any] = {
            "id": plan_id,
            "product": await self._product(price),
            "amount": price.amount_minor,
            "currency": price.currency.lower(),
            "interval": price.interval or "month",
            "usage_type": "licensed" if price.interval else "metered",
            "nickname": price.product_name,
            "metadata": metadata,
        }
        await call(self.client.v1.plans.create_async(params, idempotency("plan", params)))
        return PriceRef(plan_id, created=True)

    async def sync_price(self, price: Price) -> str:
        return (await self.ensure_price(price)).id

    # --- checkouts and the portal ---------------------------------------------------------

    async def plan_checkout(
        self,
        customer_id: str,
        price: Price,
        plan_id: str,
        success_url: str,
        cancel_url: str,
        trial_end: int | None = None,
    ) -> HostedSession:
        price_id = await self.sync_price(price)
        return await self.checkouts.plan(customer_id, price_id, plan_id, success_url, cancel_url, trial_end)

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

    async def session_result(self, ref: str) -> dict[str, Any]:
        return await self.checkouts.result(ref)

    async def portal(self, customer_id: str, return_url: str) -> HostedSession:
        if self.compatible:
            raise NotImplementedYet(
                "The Stripe-compatible server at AGENTGATE_STRIPE_API_BASE has no billing portal.",
                code="portal_unavailable",
            )
        return await call(billing_portal(self.client, customer_id, return_url))

    # --- subscriptions, invoices ----------------------------------------------------------

    async def subscription(self, subscription_id: str) -> Subscription:
        return _subscription(await call(self.client.v1.subscriptions.retrieve_async(subscription_id)))

    async def change_plan(
        self, subscription_id: str, price: Price, plan_id: str, prorate: bool
    ) -> Subscription:
        current = await call(self.client.v1.subscriptions.retrieve_async(subscription_id))
        price_id = await self.sync_price(price)
        item = {"id": current["items"]["data"][0]["id"], ("plan" if self.compatible else "price"): price_id}
        params: dict[str, Any] = {"items": [item], "metadata": {"plan_id": plan_id}}
        if self.compatible:
            params["prorate"] = prorate
        else:
            params["proration_behavior"] = "create_prorations" if prorate else "none"
        return _subscription(await call(self.client.v1.subscriptions.update_async(subscription_id, params)))

    async def cancel(self, subscription_id: str, at_period_end: bool) -> Subscription:
        if at_period_end:
            request = self.client.v1.subscriptions.update_async(
                subscription_id, {"cancel_at_period_end": True}
            )
        else:
            request = self.client.v1.subscriptions.cancel_async(subscription_id)
        return _subscription(await call(request))

    async def resume(self, subscription_id: str) -> Subscription:
        request = self.client.v1.subscriptions.update_async(subscription_id, {"cancel_at_period_end": False})
        return _subscription(await call(request))

    async def invoices(self, customer_id: str, limit: int) -> list[InvoiceInfo]:
        found = await call(self.client.v1.invoices.list_async({"customer": customer_id, "limit": limit}))
        return [_invoice_info(invoice) for invoice in found["data"]]

    async def add_invoice_item(
        self, customer_id: str, amount_minor: int, currency: str, description: str, idempotency_key: str
    ) -> str:
        params = {
            "customer": customer_id,
            "amount": amount_minor,
            "currency": currency.lower(),
            "description": description,
        }
        item = await call(
            self.client.v1.invoice_items.create_async(params, {"idempotency_key": idempotency_key})
        )
        return item["id"]

    async def payment_method(self, customer_id: str) -> dict[str, Any] | None:
        customer = await call(self.client.v1.customers.retrieve_async(customer_id))
        default = (customer.get("invoice_settings") or {}).get("default_payment_method")
        if not default:
            return None
        card = card_of(await call(self.client.v1.payment_methods.retrieve_async(default))) or {}
        return {k: card.get(k) for k in ("type", "brand", "last4", "exp_month", "exp_year")}

    def parse_event(self, payload: bytes, signature: str | None, now: int) -> dict[str, Any]:
        return verified_event(payload, signature, self.secret, now, self.tolerance)


def _subscription(obj: dict[str, Any]) -> Subscription:
    """The subscription, its plan read from the price it bills first: a Stripe-compatible server may
    keep the subscription's metadata from before a plan change (localstripe ignores metadata updates)."""
    subscription = subscription_of(obj)
    item = ((obj.get("items") or {}).get("data") or [{}])[0]
    billed = item.get("price") or item.get("plan") or {}
    plan_id = (billed.get("metadata") or {}).get("plan_id")
    return replace(subscription, plan_id=plan_id) if plan_id else subscription


def _invoice_info(invoice: dict[str, Any]) -> InvoiceInfo:
    fields = invoice_fields(invoice)
    return InvoiceInfo(
        id=invoice["id"],
        status=fields["status"],
        amount_due_minor=fields["amount_due_minor"],
        amount_paid_minor=fields["amount_paid_minor"],
        currency=fields["currency"],
        period_start=fields["period_start"],
        period_end=fields["period_end"],
        hosted_url=fields["hosted_url"],
        created=fields["created"] or 0,
        lines=(invoice.get("lines") or {}).get("data") or [],
    )
