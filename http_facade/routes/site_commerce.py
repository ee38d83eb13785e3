"""Checkout of fixed-fee packages and newsletter / waitlist subscriptions (spec 4.5)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from agent_server.billing.checkout import CheckoutBody, order_view
from agent_server.policies.ratelimit import Usage
from agent_server.site.subscriptions import ConfirmBody, SubscribeBody, subscription_view
from http_facade.errors import JSON_UTF8
from http_facade.idempotency import IdempotentRoute
from http_facade.routes.site_common import SiteDep, per_ip_limit

router = APIRouter(tags=["site"], route_class=IdempotentRoute)
FormsLimit = Annotated[Usage, Depends(per_ip_limit("forms"))]


@router.post(
    "/api/checkout.php",
    status_code=201,
    summary="Start a fixed-fee checkout",
    response_model=None,
    responses={502: {"description": "The payment provider failed; no order was opened there."}},
)
async def checkout(body: CheckoutBody, site: SiteDep, usage: FormsLimit) -> JSONResponse:
    order = await site.checkout.start(body)
    return JSONResponse(order_view(order), status_code=201, headers=usage.headers(), media_type=JSON_UTF8)


@router.get(
    "/api/checkout.php",
    summary="An order's status (pending, paid or failed, from the payment provider's events)",
)
async def order_status(
    site: SiteDep, order_id: Annotated[str, Query(min_length=1, max_length=40, description="ord_...")]
) -> dict[str, Any]:
    return order_view(await site.checkout.get(order_id))


@router.post(
    "/api/subscribe.php",
    status_code=201,
    summary="Subscribe to the newsletter or waitlist (pending until the mailed link is followed)",
    response_model=None,
    responses={
        201: {"description": "Subscribed."},
        200: {
            "description": "Already subscribed: the existing subscription, unchanged.",
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
    },
)
async def subscribe(body: SubscribeBody, site: SiteDep, usage: FormsLimit) -> JSONResponse:
    subscription, created = await site.subscriptions.subscribe(body)
    return JSONResponse(
        subscription_view(subscription),
        status_code=201 if created else 200,
        headers=usage.headers(),
        media_type=JSON_UTF8,
    )


@router.post(
    "/api/subscribe/confirm",
    summary="Confirm a subscription with the token of the mailed link (double opt-in)",
    response_model=None,
)
async def confirm_subscription(body: ConfirmBody, site: SiteDep) -> JSONResponse:
    subscription = await site.subscriptions.confirm(body.token)
    return JSONResponse(subscription_view(subscription), media_type=JSON_UTF8)
