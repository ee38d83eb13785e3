"""Single sign-on: the page (``sso_views.py``) and its identity provider connections. OpenID Connect
(issuer, client id, client secret never shown back, scopes) and SAML (the IdP's metadata XML, or the
URL it is published at), each enabled or disabled keeping its settings, deleted after a confirmation.
Domains are ``sso_domains.py``, enforcement ``sso_enforcement.py``. Every form calls the function
of its ``/admin/sso…`` route with the session as the acting admin (the plan's ``sso`` feature, the
outbound URL guard and the discovery check at save are theirs).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

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
from http_facade.pages.dashboard.sso_views import NOTICES, SSO_PAGE, sso_page
from http_facade.routes import admin_sso, sso_saml

router = dashboard_router()
Protocol = Annotated[Literal["oidc", "saml"], Path()]
PROTOCOL_NAMES = {"oidc": "OpenID Connect", "saml": "SAML"}


class OidcForm(DashboardForm):
    issuer: str = Field(default="", max_length=2048)
    client_id: str = Field(default="", max_length=255)
    client_secret: str = Field(default="", max_length=1024)  # empty: keep the stored one
    scopes: str = Field(default="openid email profile", max_length=1000)


class SamlForm(DashboardForm):
    idp_metadata_url: str = Field(default="", max_length=2048)
    idp_metadata_xml: str = Field(default="", max_length=200_000)


class StateForm(DashboardForm):
    enabled: Literal["true", "false"]


@router.get(
    SSO_PAGE, summary="Dashboard: single sign-on (connections, domains, enforcement)", responses=responses()
)
async def sso_settings(request: Request, session: SessionDep, done: str = "") -> HTMLResponse:
    return await sso_page(request, session, notice=done if done in NOTICES else "")


def _kept(stored: dict[str, Any] | None) -> dict[str, Any]:
    """What the forms do not show and a save keeps: enabled, and the permissions of new users."""
    if stored is None:
        return {}
    config = stored.get("config", stored)
    return {"enabled": stored["enabled"], "jit_permissions": config.get("jit_permissions", ["tenant:admin"])}


@router.post(
    f"{SSO_PAGE}/oidc", summary="Dashboard: connect (or change) the OpenID provider", responses=responses()
)
async def save_oidc(request: Request, form: Annotated[OidcForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    actor = actor_of(request, session)
    overview = await admin_sso.overview(request, actor)
    stored = next((c for c in overview["connections"] if c["protocol"] == "oidc"), None)
    fields = {
        "issuer": form.issuer.strip(),
        "client_id": form.client_id.strip(),
        "client_secret": form.client_secret or None,
        "scopes": form.scopes.split(),
        **_kept(stored),
    }
    try:
        async with audited(request, session.user_id, session.tenant_id, "sso.oidc.saved") as note:
            saved = await admin_sso.put_oidc(json_body(admin_sso.OidcBody, **fields), request, actor)
            note["target"], note["details"]["issuer"] = saved["id"], fields["issuer"]
    except AgentError as err:
        typed = {"oidc": {**form.model_dump(exclude={"csrf_token", "client_secret"})}}
        return await sso_page(request, session, error=err, section="oidc", typed=typed)
    return see_other(f"{SSO_PAGE}?done=oidc-saved#oidc")


@router.post(
    f"{SSO_PAGE}/saml",
    summary="Dashboard: connect (or change) the SAML identity provider",
    responses=responses(),
)
async def save_saml(request: Request, form: Annotated[SamlForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    actor = actor_of(request, session)
    stored = await sso_saml.get_settings(request, actor)
    fields = {
        "idp_metadata_url": form.idp_metadata_url.strip() or None,
        "idp_metadata_xml": form.idp_metadata_xml.strip() or None,
        **_kept(stored if stored["configured"] else None),
    }
    try:
        async with audited(request, session.user_id, session.tenant_id, "sso.saml.configure") as note:
            saved = await sso_saml.put_settings(request, actor, json_body(sso_saml.SamlSettings, **fields))
            note["target"] = saved["idp"]["entity_id"]
    except AgentError as err:
        typed = {"saml": form.model_dump(exclude={"csrf_token"})}
        return await sso_page(request, session, error=err, section="saml", typed=typed)
    return see_other(f"{SSO_PAGE}?done=saml-saved#saml")


@router.post(
    f"{SSO_PAGE}/connections/{{protocol}}",
    summary="Dashboard: enable or disable a connection, keeping its settings",
    responses=responses(404, 409),
)
async def set_state(
    request: Request, protocol: Protocol, form: Annotated[StateForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    enabled = form.enabled == "true"
    action = f"sso.{protocol}.{'enabled' if enabled else 'disabled'}"
    try:
        async with audited(request, session.user_id, session.tenant_id, action):
            body = admin_sso.ConnectionState(enabled=enabled)
            await admin_sso.patch_connection(protocol, body, request, actor_of(request, session))
    except AgentError as err:
        return await sso_page(request, session, error=err, section=protocol)
    return see_other(f"{SSO_PAGE}?done={'enabled' if enabled else 'disabled'}#{protocol}")


@router.get(
    f"{SSO_PAGE}/{{protocol}}/delete",
    summary="Dashboard: confirm deleting a connection",
    responses=responses(404),
)
async def delete_page(request: Request, protocol: Protocol, session: SessionDep) -> HTMLResponse:
    overview = await admin_sso.overview(request, actor_of(request, session))
    conn = next((c for c in overview["connections"] if c["protocol"] == protocol), None)
    if conn is None:
        raise NotFound(f"This organisation has no {PROTOCOL_NAMES[protocol]} connection.", param="protocol")
    context = {"protocol": protocol, "name": PROTOCOL_NAMES[protocol], "conn": conn, "overview": overview}
    return page(request, "sso_delete.html", context, session=session)


@router.post(
    f"{SSO_PAGE}/{{protocol}}/delete", summary="Dashboard: delete a connection", responses=responses(404, 409)
)
async def delete_connection(
    request: Request, protocol: Protocol, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    actor = actor_of(request, session)
    action = "sso.oidc.deleted" if protocol == "oidc" else "sso.saml.delete"
    try:
        async with audited(request, session.user_id, session.tenant_id, action):
            if protocol == "oidc":
                await admin_sso.delete_oidc(request, actor)
            else:
                await sso_saml.delete_settings(request, actor)
    except AgentError as err:
        return await sso_page(request, session, error=err, section=protocol)
    return see_other(f"{SSO_PAGE}?done={protocol}-deleted#{protocol}")
