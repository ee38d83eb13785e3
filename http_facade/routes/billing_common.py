"""What the billing routes share: the app's ``Billing``, the acting admin, bounded URL fields, no-store.

Tenant routes take the admin JWT (``ActorDep``: ``tenant:admin`` or ``platform:admin``) and act on the
token's tenant only; another tenant's checkout or order is 404. Paths are relative: the routers are
included under ``/{settings.billing_path_segment}`` (billing_routers.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from agent_server.billing.customers import Who
from agent_server.billing.wiring import Billing
from http_facade.routes.admin_common import Actor, ActorDep

URL_FIELD = {"min_length": 8, "max_length": 500, "pattern": r"^https?://"}
PROVIDER_TEXT = {
    402: "The card was declined (card_declined).",
    501: "This provider offers no billing portal (portal_unavailable).",
    502: "The payment provider failed or refused the request (upstream_error); nothing was changed here.",
}


def provider_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """What a route that calls the payment provider may answer besides its own errors: always 502,
    and ``statuses`` (402, 501). Declared by status; /openapi.json gives them the error envelope."""
    return {status: {"description": PROVIDER_TEXT[status]} for status in sorted({*statuses, 502})}


def get_billing(request: Request) -> Billing:
    return request.app.state.billing


def who(actor: Actor) -> Who:
    return Who(actor.user_id, actor.tenant_id, actor.ip)


async def acting(actor: ActorDep) -> Who:
    return who(actor)


def no_store(response: Response) -> None:
    """Answers with a session's address or client secret are for this caller only."""
    response.headers["Cache-Control"] = "no-store"


class ReturnTo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    success_url: str | None = Field(
        default=None,
        **URL_FIELD,
        description="Where the payer lands after paying (this service's origins only); "
        "{CHECKOUT_SESSION_ID} is replaced by the session_ref. Default: <app_url>/app/billing?session_ref=…",
    )
    cancel_url: str | None = Field(
        default=None,
        **URL_FIELD,
        description="Where the payer lands after giving up. Default: <app_url>/app/billing.",
    )


class HostedCheckout(BaseModel):
    session_ref: str = Field(description="The provider's session; send it to exchange-redirect afterwards.")
    url: str = Field(
        description="Where the payer goes: the provider's page, or with flow setup_intent or "
        "payment_intent your own page (success_url) that confirms with client_secret."
    )
    expires_in: int = Field(description="Seconds the session stays open.")
    flow: str = Field(description="hosted, setup_intent or payment_intent (docs/billing.md).")
    client_secret: str | None = Field(description="For the provider's card form (flows other than hosted).")


BillingDep = Annotated[Billing, Depends(get_billing)]
WhoDep = Annotated[Who, Depends(acting)]
