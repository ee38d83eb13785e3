"""The payment-provider port: what billing needs from a provider, in our words.

Two adapters implement it (docs/billing.md): ``stripe`` (the official SDK; any Stripe-compatible API
base) and ``sandbox`` (in-process, deterministic, no network; its checkout completes on a local
confirmation page). Events come back in one shape whatever the provider: Stripe's event object
(``{id, type, created, data: {object}}``), so one pipeline applies them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Price:
    """A plan's or an item's price: integer minor units per interval (None: one-off)."""

    lookup_key: str  # our stable id at the provider, e.g. "plan:starter:month"
    product_name: str
    amount_minor: int
    currency: str  # ISO 4217, upper case
    interval: str | None = "month"  # month, year, or None for one-off


@dataclass(frozen=True)
class Subscription:
    id: str
    customer_id: str
    status: str  # trialing, active, past_due, canceled, incomplete, unpaid
    plan_id: str | None
    current_period_start: int | None
    current_period_end: int | None
    cancel_at_period_end: bool = False
    trial_end: int | None = None


@dataclass(frozen=True)
class HostedSession:
    """Where a person finishes something at the provider (a checkout, the billing portal).

    ``flow`` is ``hosted`` when ``url`` is the provider's page; ``setup_intent`` when the payer's own
    page confirms a card with ``client_secret`` (the provider's card form) and then comes back with
    ``ref`` (docs/billing.md, "Plan checkout").
    """

    ref: str
    url: str
    expires_in: int
    flow: str = "hosted"
    client_secret: str | None = None


@dataclass(frozen=True)
class CustomerDetails:
    """What the provider's customer carries besides the tenant id (bounded by the route's body)."""

    email: str | None = None
    name: str | None = None
    address: dict[str, str] | None = None  # line1, line2, city, postal_code, state, country
    tax_id: dict[str, str] | None = None  # {type, value}, e.g. {"type": "eu_vat", "value": "DE123456789"}


@dataclass(frozen=True)
class PriceRef:
    id: str
    created: bool  # False: an identical price existed under the lookup key


@dataclass(frozen=True)
class InvoiceInfo:
    id: str
    status: str
    amount_due_minor: int
    amount_paid_minor: int
    currency: str
    period_start: int | None
    period_end: int | None
    hosted_url: str | None
    created: int
    lines: list[dict[str, Any]] = field(default_factory=list)


class BillingProvider(Protocol):
    name: str

    async def ensure_customer(
        self,
        tenant_id: str,
        email: str,
        name: str,
        existing: str | None,
        details: CustomerDetails | None = None,
    ) -> str:
        """The provider's customer id for the tenant, created once (metadata carries the tenant id);
        an ``existing`` customer gets ``details`` (the fields that are set) written to it."""
        ...

    async def sync_price(self, price: Price) -> str:
        """Create the product and price if missing, by lookup key; the provider's price id. Idempotent."""
        ...

    async def ensure_price(self, price: Price) -> PriceRef:
        """``sync_price`` that also says whether it created anything."""
        ...

    async def plan_checkout(
        self,
        customer_id: str,
        price: Price,
        plan_id: str,
        success_url: str,
        cancel_url: str,
        trial_end: int | None = None,
    ) -> HostedSession:
        """A subscription checkout; with ``trial_end`` the subscription is ``trialing`` until then and
        first charged at that moment (Stripe's ``trial_end``), without it charged at payment."""
        ...

    async def one_off_checkout(
        self,
        customer_id: str | None,
        email: str,
        lines: list[tuple[Price, int]],
        reference: str,
        success_url: str,
        cancel_url: str,
    ) -> HostedSession: ...

    async def session_result(self, ref: str) -> dict[str, Any]:
        """What a hosted session ended in: {status, subscription?, customer?, reference?}."""
        ...

    async def change_plan(
        self, subscription_id: str, price: Price, plan_id: str, prorate: bool
    ) -> Subscription: ...

    async def cancel(self, subscription_id: str, at_period_end: bool) -> Subscription: ...

    async def resume(self, subscription_id: str) -> Subscription: ...

    async def subscription(self, subscription_id: str) -> Subscription: ...

    async def invoices(self, customer_id: str, limit: int) -> list[InvoiceInfo]: ...

    async def add_invoice_item(
        self, customer_id: str, amount_minor: int, currency: str, description: str, idempotency_key: str
    ) -> str: ...

    async def portal(self, customer_id: str, return_url: str) -> HostedSession: ...

    async def payment_method(self, customer_id: str) -> dict[str, Any] | None:
        """The customer's default payment method as ``{type, brand, last4, exp_month, exp_year}``."""
        ...

    def parse_event(self, payload: bytes, signature: str | None, now: int) -> dict[str, Any]:
        """The verified event (signature, tolerance window); ValidationFailed/AuthFailed otherwise."""
        ...
