"""``/app/oauth/consent``: where a person decides whether an OAuth client may act for them
(docs/oauth.md). ``GET /oauth/authorize`` sends the browser here with its query; signing in (any way
the dashboard offers) comes first. The page names the client, the host it sends the answer to and
each scope in plain words; the decision goes back to the client as a code or ``access_denied``. A
consent is remembered per person and client, so a later request for no more scopes goes straight
back. Both steps call ``OAuthService`` (agent_server/oauth/service.py), as the JSON endpoints do.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import parse_qsl

from fastapi import Form, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import Field

from agent_server.accounts.roles import BUILDERS
from agent_server.foundation.errors import PermissionDenied
from agent_server.oauth.vocabulary import OAuthError, Owner
from http_facade.pages.dashboard.route import DashboardForm, SessionDep, checked, dashboard_router, page
from http_facade.pages.dashboard.session import APP_PATH, Session

router = dashboard_router()
CONSENT_PAGE = f"{APP_PATH}/oauth/consent"


class DecisionForm(DashboardForm):
    request: str = Field(max_length=8000, description="The authorization request's query string.")
    decision: Literal["approve", "deny"]


def _owner(session: Session) -> Owner:
    if not session.tenant_id:
        raise PermissionDenied(
            "Connecting an app needs an organisation; join one first.", code="role_not_allowed"
        )
    return Owner(session.user_id, session.tenant_id)


def _refused(request: Request, session: Session, refused: OAuthError) -> Response:
    if refused.redirect is not None:  # the client's redirect URI is known: it hears of the error
        return RedirectResponse(refused.redirect, status_code=303)
    body = refused.answer[1] if isinstance(refused.answer[1], dict) else {}
    context = {"problem": body.get("error_description") or body.get("error") or "invalid request"}
    return page(request, "oauth_refused.html", context, session=session, status=400)


@router.get(CONSENT_PAGE, summary="Dashboard: let an OAuth client act for you (the consent screen)")
async def consent_page(request: Request, session: SessionDep) -> Response:
    oauth, owner, query = request.app.state.oauth, _owner(session), list(request.query_params.multi_items())
    try:
        asked = await oauth.consent_request(str(request.url), request.headers, query)
        may_allow = session.role in BUILDERS.roles  # a remembered consent counts only while it may
        if may_allow and await oauth.remembered(asked.client_id, owner, [name for name, _ in asked.scopes]):
            return RedirectResponse(await oauth.decide(str(request.url), request.headers, query, owner), 303)
    except OAuthError as refused:
        return _refused(request, session, refused)
    context = {"asked": asked, "request_query": request.url.query}
    return page(request, "oauth_consent.html", context, session=session)


@router.post(CONSENT_PAGE, summary="Dashboard: approve or deny an OAuth client")
async def decide(request: Request, form: Annotated[DecisionForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    owner = _owner(session)
    query = parse_qsl(form.request, keep_blank_values=True)
    try:
        location = await request.app.state.oauth.decide(
            str(request.url), request.headers, query, owner if form.decision == "approve" else None
        )
    except OAuthError as refused:
        return _refused(request, session, refused)
    return RedirectResponse(location, status_code=303)
