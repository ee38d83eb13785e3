"""The sandbox provider's hosted pages (mounted only with ``AGENTGATE_BILLING_PROVIDER=sandbox``).

``/sandbox/checkout/{ref}`` stands in for the provider's Checkout page: it shows what is bought and
confirms with a sandbox test card (303 to the success URL) or cancels (303 to the cancel URL).
``/sandbox/portal/{ref}`` stands in for the billing portal: the subscription, the card and the
invoices, and "pay open invoices" with another card. Plain HTML forms, no script; the session id
(random, 24 hex digits) is the only key, as on the provider's own pages.

They carry the headers of every page of the site (http_facade/pages/security.py: no framing, no
sniffing, same-origin referrers and opener), so no other site can frame the pay button. The policy's
``form-action`` also names the origins of the session's success and cancel URLs: a browser checks a
form's redirect against it, and the checkout's answer is a 303 to one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agent_server.billing.sandbox.provider import SandboxProvider
from agent_server.billing.trial import moment
from agent_server.billing.urls import SESSION_PLACEHOLDER, origin_of
from agent_server.foundation.errors import NotFound, PaymentRequired
from http_facade.pages.security import CSP_DIRECTIVES, PAGE_HEADERS
from http_facade.pages.templating import money_minor, static_url
from http_facade.routes.billing_common import BillingDep

router = APIRouter(tags=["billing: sandbox pages"], default_response_class=HTMLResponse)
Ref = Annotated[str, Path(max_length=40, pattern=r"^[a-z]+_sbx_[0-9a-f]{24}$", description="The session id.")]
CARDS = (
    ("4242424242424242", "4242 4242 4242 4242: pays"),
    ("4000000000000341", "4000 0000 0000 0341: pays now, later renewals fail"),
    ("4000000000000002", "4000 0000 0000 0002: declined"),
)
HTML_PAGE = {"text/html": {"schema": {"type": "string"}}}
CHECKOUT_ANSWERS: dict[int | str, dict[str, Any]] = {
    303: {"description": "Paid: to the success URL; cancelled: to the cancel URL."},
    402: {"description": "The card was declined: the page again, with the reason.", "content": HTML_PAGE},
}
PORTAL_ANSWERS: dict[int | str, dict[str, Any]] = {
    303: {"description": "Paid: back to the portal page."},
    402: {"description": "Not one of the sandbox's test cards (card_declined)."},
}
FORM_BODY = {
    "requestBody": {
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["pay", "cancel"]},
                        "card": {"type": "string", "enum": [number for number, _ in CARDS]},
                    },
                }
            }
        }
    }
}


def _sandbox(billing: Any) -> SandboxProvider:
    return billing.provider


async def _form(request: Request) -> dict[str, str]:
    fields = parse_qs((await request.body())[:4096].decode("utf-8", "replace"))
    return {name: values[0] for name, values in fields.items()}


def page_headers(redirects: Iterable[str] = ()) -> dict[str, str]:
    """The site's page headers; ``form-action`` also allows the origins a form's answer redirects to."""
    targets = sorted({str(o) for url in redirects if (o := origin_of(url)) is not None})
    directives = [
        " ".join(["form-action 'self'", *targets]) if d.startswith("form-action") else d
        for d in CSP_DIRECTIVES
    ]
    return {**PAGE_HEADERS, "Content-Security-Policy": "; ".join(directives), "Cache-Control": "no-store"}


def _page(title: str, body: str, status: int = 200, redirects: Iterable[str] = ()) -> HTMLResponse:
    html = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="{static_url("css/site.css")}">'
        f'</head><body><main class="wrap"><h1>{escape(title)}</h1><p><strong>Sandbox payment provider:'
        f"</strong> nothing is charged.</p>{body}</main></body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=page_headers(redirects))


def _table(label: str, columns: tuple[str, ...], rows: str) -> str:
    """A table that scrolls inside its own box on a narrow screen, as the site's tables do."""
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in columns)
    return (
        f'<div class="table-scroll" role="region" aria-label="{escape(label)}" tabindex="0">'
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _money(amount: int, currency: str) -> str:
    return money_minor(amount, currency.upper())


def _checkout_page(session: dict[str, Any], notice: str = "", status: int = 200) -> HTMLResponse:
    rows = "".join(
        f"<tr><td>{escape(item['description'])}</td><td>{item['quantity']}</td>"
        f"<td>{_money(item['amount_total'], session['currency'])}</td></tr>"
        for item in session["line_items"]["data"]
    )
    cards = "".join(f'<option value="{n}">{escape(label)}</option>' for n, label in CARDS)
    what = "Subscription, billed monthly" if session["mode"] == "subscription" else "One-off purchase"
    trial_end = (session.get("subscription_data") or {}).get("trial_end")
    if trial_end:
        what += f", first on {moment(trial_end)} when the free trial ends: nothing is charged today"
    form = (
        f'<form method="post" class="stack"><label for="card">Card</label><select id="card" name="card">'
        f'{cards}</select><p><button name="action" value="pay">Pay</button> '
        '<button name="action" value="cancel">Cancel</button></p></form>'
        if session["status"] == "open"
        else f"<p>This checkout is {escape(session['status'])}.</p>"
    )
    notice_html = f'<p role="alert">{escape(notice)}</p>' if notice else ""
    body = (
        f"<p>{what}.</p>{_table('What is bought', ('Item', 'Quantity', 'Amount'), rows)}"
        f"<p>Due today: {_money(session['amount_total'], session['currency'])}</p>{notice_html}{form}"
    )
    return _page("Checkout", body, status, (session["success_url"], session["cancel_url"]))


@router.get("/sandbox/checkout/{ref}", summary="Sandbox checkout page: what is bought, with pay and cancel")
async def checkout_page(ref: Ref, billing: BillingDep) -> HTMLResponse:
    return _checkout_page(await _sandbox(billing).checkout_session(ref))


@router.post(
    "/sandbox/checkout/{ref}",
    summary="Confirm (pay with a sandbox card) or cancel a sandbox checkout",
    status_code=303,
    response_model=None,
    responses=CHECKOUT_ANSWERS,
    openapi_extra=FORM_BODY,
)
async def checkout_action(ref: Ref, request: Request, billing: BillingDep) -> Response:
    provider, form = _sandbox(billing), await _form(request)
    session = await provider.checkout_session(ref)
    if form.get("action") == "cancel":
        return RedirectResponse(session["cancel_url"].replace(SESSION_PLACEHOLDER, ref), status_code=303)
    try:
        session = await provider.confirm(ref, form.get("card", ""))
    except PaymentRequired as declined:
        return _checkout_page(session, declined.message, 402)
    if session["status"] != "complete":
        return _checkout_page(session, "The card was declined; try another card.", 402)
    return RedirectResponse(session["success_url"].replace(SESSION_PLACEHOLDER, ref), status_code=303)


async def _portal_session(provider: SandboxProvider, ref: str) -> dict[str, Any]:
    session = await provider.store.get("portal_session", ref)
    if session is None or provider.store.clock.now() >= session["expires_at"]:
        raise NotFound(f"No open sandbox portal session '{ref}'; ask billing-portal for a new one.")
    return session


@router.get("/sandbox/portal/{ref}", summary="Sandbox billing portal: subscription, card on file, invoices")
async def portal_page(ref: Ref, billing: BillingDep) -> HTMLResponse:
    provider = _sandbox(billing)
    session = await _portal_session(provider, ref)
    customer = session["customer"]
    card = await provider.payment_method(customer)
    subscriptions = await provider.store.owned("subscription", customer)
    invoices = await provider.invoices(customer, 24)
    subs = "".join(
        f"<li>{escape(s['id'])}: {escape(s['status'])}"
        f"{' (ends at period end)' if s['cancel_at_period_end'] else ''}</li>"
        for s in subscriptions
    )
    rows = "".join(
        f"<tr><td>{escape(i.id)}</td><td>{escape(i.status)}</td><td>{_money(i.amount_due_minor, i.currency)}</td></tr>"
        for i in invoices
    )
    cards = "".join(f'<option value="{n}">{escape(label)}</option>' for n, label in CARDS)
    card_text = f"{escape(str(card['brand']))} ending {escape(str(card['last4']))}" if card else "none"
    body = (
        f"<h2>Subscriptions</h2><ul>{subs or '<li>none</li>'}</ul><h2>Card on file</h2><p>{card_text}</p>"
        f"<h2>Invoices</h2>{_table('Invoices', ('Invoice', 'Status', 'Amount'), rows)}"
        f'<form method="post" class="stack"><label for="card">New card</label><select id="card" name="card">'
        f'{cards}</select><p><button name="action" value="pay">Pay open invoices</button></p></form>'
        f'<p><a href="{escape(session["return_url"], quote=True)}">Back</a></p>'
    )
    return _page("Billing portal", body)


@router.post(
    "/sandbox/portal/{ref}",
    summary="Pay the open invoices with a new sandbox card (the subscription is active again)",
    status_code=303,
    response_model=None,
    responses=PORTAL_ANSWERS,
    openapi_extra=FORM_BODY,
)
async def portal_pay(ref: Ref, request: Request, billing: BillingDep) -> Response:
    provider, form = _sandbox(billing), await _form(request)
    session = await _portal_session(provider, ref)
    card = form.get("card", "")
    if card not in {number for number, _ in CARDS}:
        raise PaymentRequired("Unknown sandbox card; use one the page lists.", code="card_declined")
    await provider.pay_open_invoices(session["customer"], card)
    return RedirectResponse(str(request.url), status_code=303)
