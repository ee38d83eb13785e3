"""Checkouts: ``create-checkout`` (a plan subscription), the one-off purchases (``consulting-checkout``,
``workspace-checkout``, ``hardware-checkout``, ``checkout``) and ``exchange-redirect``.

Prices come from the content pack in integer minor units (agent_server/billing/pricebook.py); the
provider's events then apply the subscription or mark the order (docs/billing.md).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from agent_server.billing.customers import Who
from agent_server.billing.pricebook import WORKSPACE_SEAT
from agent_server.billing.wiring import Billing
from http_facade.routes.billing_common import (
    BillingDep,
    HostedCheckout,
    ReturnTo,
    WhoDep,
    no_store,
    provider_errors,
)

router = APIRouter(tags=["billing"])
ITEM_ID = {"min_length": 1, "max_length": 100, "pattern": r"^[a-z0-9][a-z0-9._-]*$"}
ALL_KINDS = ("consulting", "training", "hardware", "workspace")
# The provider's session id the payer comes back with; the dashboard's query takes the same bounds.
SESSION_REF: dict[str, Any] = {"min_length": 3, "max_length": 200, "pattern": r"^[A-Za-z0-9_]+$"}


class PlanCheckoutBody(ReturnTo):
    plan_id: str = Field(
        min_length=1, max_length=40, pattern=r"^[a-z0-9][a-z0-9_-]*$", description="e.g. starter"
    )


class PlanCheckoutView(HostedCheckout):
    object: str = "checkout"
    checkout_id: str = Field(description="bco_…: this service's record of the checkout.")
    provider: str
    plan_id: str
    amount_minor: int = Field(description="The plan's price per interval, integer minor units.")
    currency: str
    interval: str | None
    first_charge_at: str | None = Field(
        description="When the subscription is first charged: the end of the tenant's trial (it starts "
        "at once, trialing); null: at payment (no trial left, or under 48 hours of it)."
    )


class ConsultingBody(ReturnTo):
    package_id: str = Field(
        **ITEM_ID, description="A consulting package with a fixed fee (/api/consulting.json)."
    )


class WorkspaceBody(ReturnTo):
    seats: StrictInt = Field(
        ge=1, le=100, description="Member seats for one month each, at the plan's monthly price."
    )


class HardwareBody(ReturnTo):
    item_id: str = Field(**ITEM_ID, description="A hardware offering (/api/hardware.json).")
    quantity: StrictInt = Field(default=1, ge=1, le=10, description="A JSON integer (not a string).")


class ItemBody(ReturnTo):
    item_id: str = Field(
        **ITEM_ID,
        description=f"Any purchasable item: a fixed-fee package, a training, hardware or {WORKSPACE_SEAT}.",
    )
    quantity: StrictInt = Field(
        default=1, ge=1, le=100, description="Seats for trainings and workspace seats (a JSON integer)."
    )


class OrderItem(BaseModel):
    kind: str
    id: str
    name: str


class OrderView(BaseModel):
    object: str = "order"
    order_id: str
    status: str = Field(description="pending, paid, failed or expired")
    provider: str
    item: OrderItem
    quantity: int
    details: dict[str, Any]
    currency: str
    unit_amount_minor: int
    amount_minor: int
    amount: str = Field(description="The amount as a decimal text, for people.")
    session_ref: str
    checkout_url: str
    created_at: str
    expires_at: str


class OrderCheckoutView(OrderView):
    checkout: HostedCheckout


class ExchangeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_ref: str = Field(**SESSION_REF)


class SubscriptionBrief(BaseModel):
    id: str
    status: str
    plan_id: str | None
    current_period_end: str | None
    cancel_at_period_end: bool


class ExchangeView(BaseModel):
    object: str = "checkout_result"
    session_ref: str
    kind: str = Field(description="plan or order")
    status: str = Field(description="open, complete or expired")
    checkout_id: str | None = None
    plan_id: str | None = None
    subscription: SubscriptionBrief | None = None
    order: OrderView | None = None


@router.post(
    "/create-checkout",
    status_code=201,
    summary="Start a plan subscription for the token's tenant at the payment provider",
    response_model=PlanCheckoutView,
    responses=provider_errors(),
)
async def create_checkout(
    body: PlanCheckoutBody, billing: BillingDep, who: WhoDep, response: Response
) -> Any:
    no_store(response)
    return await billing.checkouts.start(who, body.plan_id, body.success_url, body.cancel_url)


async def _buy(
    billing: Billing,
    who: Who,
    item_id: str,
    kinds: tuple[str, ...],
    quantity: int,
    body: ReturnTo,
    details: dict[str, Any],
    param: str = "item_id",
) -> dict[str, Any]:
    tenant = await billing.customers.tenant(who.tenant_id)
    item = billing.purchases.item(item_id, tenant.plan_id, kinds, param)
    return await billing.purchases.start(who, item, quantity, details, body.success_url, body.cancel_url)


@router.post(
    "/consulting-checkout",
    status_code=201,
    summary="Buy a fixed-fee consulting package (one-off)",
    response_model=OrderCheckoutView,
    responses=provider_errors(),
)
async def consulting_checkout(
    body: ConsultingBody, billing: BillingDep, who: WhoDep, response: Response
) -> Any:
    no_store(response)
    return await _buy(billing, who, body.package_id, ("consulting",), 1, body, {}, "package_id")


@router.post(
    "/workspace-checkout",
    status_code=201,
    summary="Buy workspace seats: one member seat for one month each, at the plan's monthly price",
    response_model=OrderCheckoutView,
    responses=provider_errors(),
)
async def workspace_checkout(
    body: WorkspaceBody, billing: BillingDep, who: WhoDep, response: Response
) -> Any:
    no_store(response)
    details = {"seats": body.seats, "months": 1}
    return await _buy(billing, who, WORKSPACE_SEAT, ("workspace",), body.seats, body, details, "seats")


@router.post(
    "/hardware-checkout",
    status_code=201,
    summary="Buy a hardware offering at its list price (one-off)",
    response_model=OrderCheckoutView,
    responses=provider_errors(),
)
async def hardware_checkout(body: HardwareBody, billing: BillingDep, who: WhoDep, response: Response) -> Any:
    no_store(response)
    return await _buy(billing, who, body.item_id, ("hardware",), body.quantity, body, {})


@router.post(
    "/checkout",
    status_code=201,
    summary="Buy any purchasable catalogue item (package, training seats, hardware, workspace seats)",
    response_model=OrderCheckoutView,
    responses=provider_errors(),
)
async def item_checkout(body: ItemBody, billing: BillingDep, who: WhoDep, response: Response) -> Any:
    no_store(response)
    details = {"seats": body.quantity, "months": 1} if body.item_id == WORKSPACE_SEAT else {}
    return await _buy(billing, who, body.item_id, ALL_KINDS, body.quantity, body, details)


@router.post(
    "/exchange-redirect",
    summary="Turn the session the payer came back with into its result: status, plan, subscription or order",
    response_model=ExchangeView,
    responses=provider_errors(402),
)
async def exchange_redirect(body: ExchangeBody, billing: BillingDep, who: WhoDep) -> Any:
    return await billing.checkouts.exchange(who, body.session_ref)
