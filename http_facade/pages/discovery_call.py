"""The discovery call's page: what the call is, and the form that requests it on this site.

The form calls what ``POST /api/discovery-call.json`` calls (``DiscoveryCalls.request``), counts
against the same ``forms`` limit and takes posts from this site's pages only. The answer is a
confirmation page; the visitor gets a confirmation mail and the team a notice (agent_server/site/leads.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, EmailStr, Field

from agent_server.site import catalogue as documents
from agent_server.site.leads import OTHER, PAGE_PATH, CallRequest
from http_facade.pages.form_state import FormState, redisplays
from http_facade.pages.limits import count_page_hit
from http_facade.pages.openapi import page_responses
from http_facade.pages.route import PageRoute
from http_facade.pages.security import refuse_cross_site
from http_facade.pages.templating import render
from http_facade.routes.site_common import SiteDep

router = APIRouter(tags=["pages"], route_class=PageRoute, default_response_class=HTMLResponse)
NO_STORE = {"Cache-Control": "no-store"}  # the confirmation names the visitor's address


class CallForm(BaseModel):
    """The form's fields: those of ``POST /api/discovery-call.json``, empty text meaning none."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    email: EmailStr
    company: str = Field(default="", max_length=200)
    topic: str = Field(min_length=1, max_length=200)
    language: str = Field(default="", max_length=8)
    preferred_times: str = Field(default="", max_length=300)
    message: str = Field(default="", max_length=2000)


async def _call_page(request: Request, form: FormState | None = None) -> HTMLResponse:
    site = request.app.state.site
    k = site.services.knowledge
    base = site.services.settings.public_base_url.rstrip("/")
    call = documents.discovery_call(k.pack, k.revision, base)
    form = (form or FormState.blank(language=call["languages"][0])).at("call")
    context = {"call": call, "form": form, "other": OTHER}
    return render(request, "discovery_call.html", context, form.status)


@router.get(PAGE_PATH, summary="Discovery call page: what the free call is, and the form to request it")
async def discovery_call(request: Request) -> HTMLResponse:
    return await _call_page(request)


@router.post(
    PAGE_PATH,
    summary="Discovery call form: request the call, then a confirmation page",
    responses=page_responses(403, 429),
)
@redisplays(_call_page)
async def request_call(request: Request, form: Annotated[CallForm, Form()], site: SiteDep) -> HTMLResponse:
    refuse_cross_site(request)
    await count_page_hit(request, site, "forms")
    body = CallRequest(
        name=form.name,
        email=form.email,
        company=form.company or None,
        topic=form.topic,
        language=form.language or None,
        preferred_times=form.preferred_times or None,
        message=form.message or None,
    )
    row = await request.app.state.discovery_calls.request(body, source="page")
    call = site.services.knowledge.pack.discovery_call
    context = {"lead": row, "call": call}
    return render(request, "discovery_call_sent.html", context, headers=NO_STORE)
