"""What the single sign-on page shows: ``GET /admin/sso`` and ``GET /admin/sso/saml`` (connections
without secrets, domains with the DNS record to publish, enforcement, what the identity provider
needs from us), the plan gate, and a refused form's message next to the form it belongs to."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Request
from fastapi.responses import HTMLResponse

from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.plan_gate import plan_gate
from http_facade.pages.dashboard.route import actor_of, page
from http_facade.pages.dashboard.session import APP_PATH, Session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.routes import admin_sso, sso_saml

SSO_PAGE = f"{APP_PATH}/sso"
Section = Literal["", "enforcement", "domains", "oidc", "saml"]
NOTICES = {
    "claimed": "The domain is claimed: publish its DNS record below, then verify it.",
    "verified": "The domain is verified: its people can sign in through your identity provider.",
    "domain-deleted": "The domain claim is deleted.",
    "oidc-saved": "The OpenID Connect settings are saved.",
    "oidc-deleted": "The OpenID Connect connection is deleted.",
    "saml-saved": "The SAML settings are saved.",
    "saml-deleted": "The SAML connection is deleted.",
    "enabled": "The connection is enabled.",
    "disabled": "The connection is disabled: nobody signs in through it until you enable it.",
    "enforced": "Single sign-on is required: members sign in through your identity provider only.",
    "not-enforced": "Single sign-on is no longer required: members may sign in with a password or a passkey.",
}


def _oidc_form(stored: dict[str, Any] | None) -> dict[str, str]:
    """The OIDC form's fields as stored (the secret is never shown back)."""
    if stored is None:
        return {"issuer": "", "client_id": "", "scopes": "openid email profile"}
    config = stored["config"]
    return {
        "issuer": config["issuer"],
        "client_id": config["client_id"],
        "scopes": " ".join(config["scopes"]),
    }


async def sso_page(
    request: Request,
    session: Session,
    *,
    error: AgentError | None = None,
    section: Section = "",
    notice: str = "",
    typed: dict[str, Any] | None = None,
) -> HTMLResponse:
    """The page; after a refused form, ``error`` shows in its ``section`` with what was ``typed``."""
    actor = actor_of(request, session)
    _, plan = await tenant_of(request, session)
    overview = await admin_sso.overview(request, actor)
    connections = {conn["protocol"]: conn for conn in overview["connections"]}
    typed = typed or {}
    context = {
        "overview": overview,
        "oidc": connections.get("oidc"),
        "saml": await sso_saml.get_settings(request, actor),
        "gate": plan_gate(request, plan, "sso"),
        "error": error,
        "section": section,
        "notice": NOTICES.get(notice, ""),
        "typed": typed,
        "oidc_form": typed.get("oidc") or _oidc_form(connections.get("oidc")),
        "saml_form": typed.get("saml") or {"idp_metadata_url": "", "idp_metadata_xml": ""},
    }
    status = error.http_status if error else 200
    return page(request, "sso.html", context, session=session, status=status)
