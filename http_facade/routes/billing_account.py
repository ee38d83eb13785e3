"""The tenant's billing account: ``customer``, ``status``, ``billing-portal``, ``invoices``; and
``sync-models`` (platform admins: the plans' and models' prices pushed to the provider)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, EmailStr, Field

from agent_server.billing.port import CustomerDetails
from http_facade.routes.admin_common import PlatformDep
from http_facade.routes.billing_common import URL_FIELD, BillingDep, WhoDep, no_store, provider_errors, who

router = APIRouter(tags=["billing"])
LINE = {"max_length": 200, "pattern": r"^[^\x00-\x1f\x7f]*$"}  # one line of text, no control characters


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line1: str = Field(min_length=1, **LINE)
    line2: str | None = Field(default=None, **LINE)
    city: str = Field(min_length=1, max_length=100, pattern=LINE["pattern"])
    postal_code: str = Field(min_length=1, max_length=20, pattern=r"^[A-Za-z0-9 -]+$")
    state: str | None = Field(default=None, max_length=100, pattern=LINE["pattern"])
    country: str = Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2, e.g. DE")


class TaxId(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["eu_vat", "gb_vat", "ch_vat", "no_vat", "us_ein", "au_abn", "nz_gst", "es_cif"]
    value: str = Field(
        min_length=4, max_length=40, pattern=r"^[A-Za-z0-9 .-]+$", description="e.g. DE123456789"
    )


class CustomerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr | None = Field(default=None, max_length=320, description="Where invoices go.")
    name: str | None = Field(default=None, min_length=1, **LINE, description="The legal name on invoices.")
    address: Address | None = None
    tax_id: TaxId | None = None


class CustomerView(BaseModel):
    object: str = "customer"
    customer_id: str
    provider: str
    created: bool = Field(description="True when this call created the customer at the provider.")
    email: str | None
    name: str | None
    address: Address | None
    tax_id: TaxId | None


class PlanPrice(BaseModel):
    amount_minor: int
    currency: str
    interval: str | None


class PlanBrief(BaseModel):
    id: str
    name: str
    price: PlanPrice | None = Field(description="null: priced by contract.")


class StandingView(BaseModel):
    state: str = Field(
        description="trial, active, grace, contract, trial_ended, payment_overdue, subscription_ended, "
        "contract_ended"
    )
    trial_ends_at: str
    grace_until: str | None
    contract_ends_at: str | None = Field(
        description="A negotiated plan's contract end (set by the platform)."
    )
    reason: str | None
    code: str | None = Field(description="The 402 code live keys get now, if they are refused.")


class StatusSubscription(BaseModel):
    id: str
    status: str
    plan_id: str | None
    current_period_start: str | None
    current_period_end: str | None
    cancel_at_period_end: bool


class NextCharge(BaseModel):
    at: str = Field(description="When: the end of the current period (RFC 3339).")
    amount_minor: int = Field(description="The plan's price, integer minor units, without VAT.")
    currency: str
    first: bool = Field(description="The first charge: the subscription is in its trial until then.")


class Card(BaseModel):
    type: str | None = None
    brand: str | None = None
    last4: str | None = None
    exp_month: int | None = None
    exp_year: int | None = None


class StatusView(BaseModel):
    object: str = "billing_status"
    tenant_id: str
    provider: str
    plan: PlanBrief
    trial_ends_at: str
    standing: StandingView
    next_charge: NextCharge | None = Field(
        description="The subscription's next charge; null without a live one, or when it ends then."
    )
    first_charge_at: str | None = Field(
        description="Without a live subscription: when one started now is first charged (the trial's "
        "end); null: at payment."
    )
    prices_include_vat: bool = Field(description="false: VAT is added to the prices on each invoice.")
    subscription: StatusSubscription | None
    cancel_at_period_end: bool
    grace_until: str | None
    customer_id: str | None
    payment_method: Card | None = Field(
        description="The card on file: brand, last4, expiry (nothing secret)."
    )


class PortalBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    return_url: str | None = Field(
        default=None, **URL_FIELD, description="Where the portal sends the customer back."
    )


class PortalView(BaseModel):
    object: str = "billing_portal_session"
    url: str
    expires_in: int
    provider: str


class InvoiceView(BaseModel):
    object: str = "invoice"
    id: str
    status: str
    currency: str
    amount_due_minor: int
    amount_paid_minor: int
    amount_due: str
    period_start: str | None
    period_end: str | None
    hosted_url: str | None
    created_at: str


class InvoiceList(BaseModel):
    object: str = "list"
    data: list[InvoiceView]
    has_more: bool
    next_starting_after: str | None


class SyncBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SyncedPrice(BaseModel):
    lookup_key: str
    provider_id: str
    product_name: str
    amount_minor: int
    currency: str
    interval: str | None


class SyncView(BaseModel):
    object: str = "price_sync"
    provider: str
    created: list[SyncedPrice]
    kept: list[SyncedPrice]


@router.post(
    "/customer",
    summary="Create or update the tenant's customer at the payment provider (e-mail, name, address, tax id)",
    response_model=CustomerView,
    responses=provider_errors(),
)
async def customer(body: CustomerBody, billing: BillingDep, acting: WhoDep) -> Any:
    details = CustomerDetails(
        email=str(body.email) if body.email else None,
        name=body.name,
        address=body.address.model_dump(exclude_none=True) if body.address else None,
        tax_id=body.tax_id.model_dump() if body.tax_id else None,
    )
    customer_id, created = await billing.customer(acting, details)
    return {
        "customer_id": customer_id,
        "provider": billing.provider.name,
        "created": created,
        **body.model_dump(),
    }


@router.get(
    "/status",
    summary="The tenant's billing: plan, trial, standing, subscription, card on file",
    response_model=StatusView,
    responses=provider_errors(),  # the card on file is asked of the provider once
)
async def status(billing: BillingDep, acting: WhoDep) -> Any:
    return await billing.status.status(acting.tenant_id)


@router.post(
    "/billing-portal",
    summary="A session of the provider's billing portal for the tenant's customer",
    response_model=PortalView,
    responses=provider_errors(501),
)
async def billing_portal(body: PortalBody, billing: BillingDep, acting: WhoDep, response: Response) -> Any:
    no_store(response)
    session = await billing.portal(acting, body.return_url)
    return {"url": session.url, "expires_in": session.expires_in, "provider": billing.provider.name}


@router.get("/invoices", summary="The tenant's invoices, newest first", response_model=InvoiceList)
async def invoices(
    billing: BillingDep,
    acting: WhoDep,
    limit: int = Query(default=20, ge=1, le=100),
    starting_after: str | None = Query(
        default=None, min_length=3, max_length=100, description="The last id of the previous page."
    ),
) -> Any:
    return await billing.status.invoices(acting.tenant_id, limit, starting_after)


@router.post(
    "/sync-models",
    summary="Push the plans' and models' prices to the provider's products and prices (platform admins; idempotent)",
    response_model=SyncView,
    responses=provider_errors(),
)
async def sync_models(body: SyncBody, billing: BillingDep, actor: PlatformDep) -> Any:
    return await billing.sync_models(who(actor))
