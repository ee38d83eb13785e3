"""Plan and billing: the tenant's billing status and invoices, a plan checkout (or a plan change when
a subscription exists), cancel and resume, and the provider's billing portal. Every form calls the
function of its ``/<billing segment>/…`` route with the session as the acting admin.

Checkouts started here come back to ``/app/billing?session_ref=…``, where the session is exchanged
for its result (``exchange-redirect``), so the page shows what the payment did.

The page says in plain words what the API's states mean, when the first (or next) charge happens and
that VAT comes on top of the prices; every amount goes through the pages' one money format (the
``money`` and ``money_minor`` filters of templating.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import Field

from agent_server.billing.trial import OVERDUE, PAID
from agent_server.foundation.errors import AgentError
from agent_server.gateway.plans import subscription_plans
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    actor_of,
    checked,
    dashboard_router,
    page,
    responses,
)
from http_facade.pages.dashboard.session import APP_PATH, Session
from http_facade.routes import billing_account, billing_checkout, billing_subscription
from http_facade.routes.billing_common import PROVIDER_TEXT, who

router = dashboard_router()
BILLING_PAGE = f"{APP_PATH}/billing"
PLAN_ID = r"^[a-z0-9][a-z0-9_-]{0,39}$"
# The API's words, as the page says them.
STANDING_WORDS = {
    "trial": "Free trial",
    "active": "Subscribed",
    "grace": "Payment failed, access continues for now",
    "contract": "Billed by contract",
    "trial_ended": "Trial ended",
    "payment_overdue": "Payment overdue",
    "subscription_ended": "Subscription ended",
    "contract_ended": "Contract ended",
}
SUBSCRIPTION_WORDS = {
    "trialing": "in its free trial",
    "active": "active",
    "past_due": "waiting for a failed payment",
    "unpaid": "unpaid",
    "canceled": "ended",
    "incomplete": "waiting for the first payment",
    "incomplete_expired": "not started (the first payment was not made)",
}
CHECKOUT_WORDS = {"complete": "The checkout is complete", "open": "The checkout is still open"}
CHECKOUT_WORDS["expired"] = "The checkout expired without a payment"
INVOICE_WORDS = {
    "draft": "draft",
    "open": "due",
    "paid": "paid",
    "uncollectible": "uncollectible",
    "void": "void",
}


class PlanForm(DashboardForm):
    plan_id: str = Field(pattern=PLAN_ID)


class SubscriptionForm(DashboardForm):
    action: Literal["cancel", "resume"]


def _answers(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The page's error answers, and what the payment provider may answer (shown with its status)."""
    answers = responses(409)
    for status in sorted({*statuses, 502}):
        answers[status] = {"description": PROVIDER_TEXT[status], "content": answers[400]["content"]}
    return answers


def _back_url(request: Request, query: str) -> str:
    base = request.app.state.services.settings.public_base_url.rstrip("/")
    return f"{base}{BILLING_PAGE}?{query}"


async def _page(
    request: Request,
    session: Session,
    *,
    error: AgentError | None = None,
    result: dict[str, Any] | None = None,
    notice: str = "",
) -> HTMLResponse:
    billing, acting = request.app.state.billing, who(actor_of(request, session))
    plans = subscription_plans(request.app.state.services.knowledge.pack.plans)
    context = {
        "status": await billing.status.status(acting.tenant_id),
        "invoices": (await billing.status.invoices(acting.tenant_id, 20, None))["data"],
        "plans": plans,
        "plan_names": {plan.id: plan.name for plan in plans},
        "error": error,
        "result": result,
        "notice": notice,
        "live_statuses": PAID | OVERDUE,
        "standing_words": STANDING_WORDS,
        "subscription_words": SUBSCRIPTION_WORDS,
        "checkout_words": CHECKOUT_WORDS,
        "invoice_words": INVOICE_WORDS,
    }
    return page(request, "billing.html", context, session=session, status=error.http_status if error else 200)


@router.get(
    BILLING_PAGE,
    summary="Dashboard: plan and billing (status, plan change, invoices)",
    responses={**_answers(402), 404: {"description": "No checkout with this session_ref for the tenant."}},
)
async def billing_page(
    request: Request,
    session: SessionDep,
    session_ref: Annotated[str | None, Query(**billing_checkout.SESSION_REF)] = None,
    checkout: Annotated[str | None, Query(max_length=20)] = None,
) -> HTMLResponse:
    if session_ref is None:
        notice = "The checkout was cancelled; nothing was charged." if checkout == "canceled" else ""
        return await _page(request, session, notice=notice)
    billing, acting = request.app.state.billing, who(actor_of(request, session))
    try:
        result = await billing_checkout.exchange_redirect(
            billing_checkout.ExchangeBody(session_ref=session_ref), billing, acting
        )
    except AgentError as err:
        return await _page(request, session, error=err)
    return await _page(request, session, result=result)


@router.post(
    f"{BILLING_PAGE}/checkout",
    summary="Dashboard: subscribe to a plan at the payment provider (redirects to its checkout)",
    responses=_answers(),
)
async def plan_checkout(request: Request, form: Annotated[PlanForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    billing, acting = request.app.state.billing, who(actor_of(request, session))
    body = billing_checkout.PlanCheckoutBody(
        plan_id=form.plan_id,
        success_url=_back_url(request, "session_ref={CHECKOUT_SESSION_ID}"),
        cancel_url=_back_url(request, "checkout=canceled"),
    )
    try:
        started = await billing_checkout.create_checkout(body, billing, acting, Response())
    except AgentError as err:
        return await _page(request, session, error=err)
    return RedirectResponse(started["url"], status_code=303)


@router.post(
    f"{BILLING_PAGE}/plan",
    summary="Dashboard: change the subscription's plan (prorated)",
    responses=_answers(402),
)
async def change_plan(request: Request, form: Annotated[PlanForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    body = billing_subscription.SubscriptionAction(action="change", plan_id=form.plan_id)
    names = {plan.id: plan.name for plan in request.app.state.services.knowledge.pack.plans}
    return await _subscription(
        request, session, body, f"The plan is now {names.get(form.plan_id, form.plan_id)}."
    )


@router.post(
    f"{BILLING_PAGE}/subscription",
    summary="Dashboard: cancel the subscription at the period's end, or resume it",
    responses=_answers(402),
)
async def subscription(
    request: Request, form: Annotated[SubscriptionForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    body = billing_subscription.SubscriptionAction(action=form.action)
    done = "ends at the end of the period" if form.action == "cancel" else "continues"
    return await _subscription(request, session, body, f"The subscription {done}.")


async def _subscription(
    request: Request, session: Session, body: billing_subscription.SubscriptionAction, notice: str
) -> Response:
    try:
        async with audited(
            request, session.user_id, session.tenant_id, f"billing.subscription.{body.action}"
        ):
            await billing_subscription.subscription_action(body, actor_of(request, session), request)
    except AgentError as err:
        return await _page(request, session, error=err)
    return await _page(request, session, notice=notice)


@router.post(
    f"{BILLING_PAGE}/portal",
    summary="Dashboard: open the payment provider's billing portal (card, invoices)",
    responses=_answers(501),
)
async def portal(request: Request, form: Annotated[DashboardForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    billing, acting = request.app.state.billing, who(actor_of(request, session))
    body = billing_account.PortalBody(return_url=_back_url(request, "portal=done"))
    try:
        opened = await billing_account.billing_portal(body, billing, acting, Response())
    except AgentError as err:
        return await _page(request, session, error=err)
    return RedirectResponse(opened["url"], status_code=303)
