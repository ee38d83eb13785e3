"""The newsletter sign-up and the ask box as plain HTML forms (they work without JavaScript).

Sign-up uses the service of ``POST /api/subscribe.php``, and the page of the mailed link that of
``POST /api/subscribe/confirm`` (its GET only looks at the token); the ask form uses the ask core of
``POST /api/ask.php`` (whose streaming answer the ask module prefers when scripts run). Both count
against the same per-IP limits as their JSON twins.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, EmailStr, Field

from agent_server.knowledge import ask as ask_core
from agent_server.site.subscriptions import CONFIRM_PAGE, SubscribeBody, subscription_view
from http_facade.pages.form_state import FormState, redisplays
from http_facade.pages.limits import count_page_hit
from http_facade.pages.openapi import page_responses
from http_facade.pages.route import PageRoute
from http_facade.pages.security import refuse_cross_site
from http_facade.pages.templating import render
from http_facade.routes.site_common import SiteDep

router = APIRouter(tags=["pages"], route_class=PageRoute, default_response_class=HTMLResponse)
NO_STORE = {"Cache-Control": "no-store"}  # the answer names the visitor's e-mail address


class NewsletterForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr
    list: Literal["newsletter", "waitlist"] = "newsletter"
    name: str = Field(default="", max_length=200)


class ConfirmForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200)


class AskForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000)


async def _newsletter_page(request: Request, form: FormState | None = None) -> HTMLResponse:
    form = (form or FormState.blank(list="newsletter")).at("newsletter")
    return render(request, "newsletter.html", {"form": form}, form.status)


@router.get("/newsletter", summary="Newsletter page: the sign-up form")
async def newsletter(request: Request) -> HTMLResponse:
    return await _newsletter_page(request)


@router.post(
    "/newsletter",
    summary="Newsletter form: subscribe, then a confirmation page",
    responses=page_responses(429),
)
@redisplays(_newsletter_page)
async def subscribe(request: Request, form: Annotated[NewsletterForm, Form()], site: SiteDep) -> HTMLResponse:
    refuse_cross_site(request)
    await count_page_hit(request, site, "forms")
    body = SubscribeBody(email=form.email, list=form.list, name=form.name or None)
    subscription, created = await site.subscriptions.subscribe(body)
    context = {"subscription": subscription_view(subscription), "created": created}
    # 200 either way: the page is the confirmation; the JSON route tells 201 from 200.
    return render(request, "newsletter_done.html", context, headers=NO_STORE)


async def _confirm_page(
    request: Request, token: str, state: str, form: FormState | None = None
) -> HTMLResponse:
    form = (form or FormState.blank()).at("confirm")
    context = {"token": token, "state": state, "form": form}
    return render(request, "newsletter_confirm.html", context, form.status, headers=NO_STORE)


async def _confirm_again(request: Request, form: FormState) -> HTMLResponse:
    token = form.value("token")
    state = await request.app.state.site.subscriptions.link_state(token) if token else "invalid"
    return await _confirm_page(request, token, state, form)


@router.get(CONFIRM_PAGE, summary="Newsletter: the confirmation link's page (changes nothing)")
async def confirm_page(
    request: Request, site: SiteDep, token: Annotated[str, Query(max_length=200)] = ""
) -> HTMLResponse:
    state = await site.subscriptions.link_state(token) if token else "invalid"
    return await _confirm_page(request, token, state)


@router.post(
    CONFIRM_PAGE,
    summary="Newsletter: confirm the subscription (the link's button)",
    responses=page_responses(),
)
@redisplays(_confirm_again)
async def confirm(request: Request, form: Annotated[ConfirmForm, Form()], site: SiteDep) -> HTMLResponse:
    refuse_cross_site(request)
    subscription = await site.subscriptions.confirm(form.token)
    context = {"subscription": subscription_view(subscription), "created": True, "confirmed": True}
    return render(request, "newsletter_done.html", context, headers=NO_STORE)


@router.post(
    "/ask",
    summary="Ask form: the answer of /api/ask.php as a page",
    responses=page_responses(429, 503),
)
async def ask(request: Request, form: Annotated[AskForm, Form()], site: SiteDep) -> HTMLResponse:
    await count_page_hit(request, site, "ask")
    s = site.services
    home = s.knowledge.pack.company.headquarters.city
    answer = await ask_core.answer(form.query, s.knowledge, s.weather, site.llm, home)
    return render(request, "ask_answer.html", {"answer": answer.model_dump(mode="json")}, headers=NO_STORE)
