"""Single sign-on domains on the dashboard: claim an e-mail domain (the DNS TXT record to publish is
shown with a copy button), verify it against DNS, delete a claim after a confirmation. The forms call
the functions of ``/admin/sso/domains…``; claiming and verifying stay open on every plan (they prepare
an upgrade), as in the JSON API."""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.foundation.errors import AgentError, NotFound
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.json_body import json_body
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    actor_of,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.sso_views import SSO_PAGE, sso_page
from http_facade.routes import admin_sso

router = dashboard_router()
DOMAINS = f"{SSO_PAGE}/domains"
Domain = Annotated[str, Path(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9._-]+$")]


class DomainForm(DashboardForm):
    domain: str = Field(default="", max_length=253)


@router.post(
    DOMAINS,
    summary="Dashboard: claim an e-mail domain (shows the DNS record to publish)",
    responses=responses(409),
)
async def claim(request: Request, form: Annotated[DomainForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    try:
        async with audited(request, session.user_id, session.tenant_id, "sso.domain.claimed") as note:
            body = json_body(admin_sso.DomainBody, domain=form.domain.strip())
            claimed = await admin_sso.claim_domain(body, request, Response(), actor_of(request, session))
            note["target"] = claimed["domain"]
    except AgentError as err:
        typed = {"domain": form.domain}
        return await sso_page(request, session, error=err, section="domains", typed=typed)
    return see_other(f"{SSO_PAGE}?done=claimed#domain-{claimed['domain']}")


@router.post(
    f"{DOMAINS}/{{domain}}/verify",
    summary="Dashboard: look the domain's DNS record up and verify the claim",
    responses=responses(404, 409),
)
async def verify(
    request: Request, domain: Domain, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    try:
        async with audited(request, session.user_id, session.tenant_id, "sso.domain.verified", target=domain):
            await admin_sso.verify_domain(domain, request, actor_of(request, session))
    except AgentError as err:
        return await sso_page(request, session, error=err, section="domains", typed={"failed": domain})
    return see_other(f"{SSO_PAGE}?done=verified#domain-{domain}")


@router.get(
    f"{DOMAINS}/{{domain}}/delete",
    summary="Dashboard: confirm deleting a domain claim",
    responses=responses(404),
)
async def delete_page(request: Request, domain: Domain, session: SessionDep) -> HTMLResponse:
    listed = await admin_sso.list_domains(request, actor_of(request, session))
    claim = next((d for d in listed["data"] if d["domain"] == domain.lower()), None)
    if claim is None:
        raise NotFound(f"This organisation has no claim of {domain}.", param="domain")
    return page(request, "sso_domain_delete.html", {"claim": claim}, session=session)


@router.post(
    f"{DOMAINS}/{{domain}}/delete", summary="Dashboard: delete a domain claim", responses=responses(404, 409)
)
async def delete(
    request: Request, domain: Domain, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    try:
        async with audited(request, session.user_id, session.tenant_id, "sso.domain.deleted", target=domain):
            await admin_sso.delete_domain(domain, request, actor_of(request, session))
    except AgentError as err:
        return await sso_page(request, session, error=err, section="domains")
    return see_other(f"{SSO_PAGE}?done=domain-deleted#domains")
