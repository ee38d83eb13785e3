"""The route policy: for every route of the admin API and the dashboard, who may call it.

One table, ``ROUTE_POLICY``: (method, route template) → an access level of
``agent_server/accounts/roles.py`` (the role table is in docs/accounts.md, "Roles"). It is enforced in
two places only: ``authorize`` below, called by the admin JWT dependencies (``gateway_deps``: every
``/admin`` route that takes a token, and the billing routes), and by the dashboard's session
dependency (``pages/dashboard/session.py``). A route missing here is refused to everyone (403), and
``tests/security/test_role_policy.py`` fails naming the line to add.

Adding a route: one line here, e.g. ``("GET", "/admin/logs"): READERS,``. HEAD is judged as GET.
Billing routes are written under ``/{billing}``, whatever ``AGENTGATE_BILLING_PATH_SEGMENT`` says, and
the connectors under their neutral names (``/admin/office_suite/``, ``/admin/search_provider/``)
whatever ``AGENTGATE_OFFICE_SUITE_PATH_SEGMENT`` and ``AGENTGATE_SEARCH_PROVIDER_PATH_SEGMENT`` say.
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.requests import Request

from agent_server.accounts.roles import (
    ADMINS,
    BILLERS,
    BUILDERS,
    NOBODY,
    OWNERS,
    PEOPLE_READERS,
    PLATFORM,
    PUBLIC,
    READERS,
    SELF,
    Access,
)
from agent_server.gateway.tokens import AdminClaims

BILLING = "/{billing}"
_TEMPLATES = "role_policy_templates"

# fmt: off
ROUTE_POLICY: dict[tuple[str, str], Access] = {
    # Signing in, passwords, passkeys: one's own account.
    ("POST", "/admin/auth/login"): PUBLIC,
    ("POST", "/admin/auth/logout"): SELF,
    ("POST", "/admin/auth/password"): SELF,
    ("POST", "/admin/auth/password/forgot"): PUBLIC,
    ("GET", "/admin/auth/password/reset"): PUBLIC,
    ("POST", "/admin/auth/password/reset"): PUBLIC,
    ("POST", "/admin/auth/passkey/options"): PUBLIC,
    ("POST", "/admin/auth/passkey"): PUBLIC,
    ("POST", "/admin/auth/passkeys/options"): SELF,
    ("POST", "/admin/auth/passkeys"): SELF,
    ("GET", "/admin/auth/passkeys"): SELF,
    ("PATCH", "/admin/auth/passkeys/{passkey_id}"): SELF,
    ("DELETE", "/admin/auth/passkeys/{passkey_id}"): SELF,
    # Members and invitations.
    ("GET", "/admin/members"): PEOPLE_READERS,
    ("GET", "/admin/members/{user_id}"): PEOPLE_READERS,
    ("PATCH", "/admin/members/{user_id}"): ADMINS,
    ("DELETE", "/admin/members/{user_id}"): ADMINS,
    ("GET", "/admin/membership"): SELF,
    ("DELETE", "/admin/membership"): SELF,
    ("POST", "/admin/ownership/transfer"): OWNERS,
    ("GET", "/admin/invitations"): PEOPLE_READERS,
    ("POST", "/admin/invitations"): ADMINS,
    ("POST", "/admin/invitations/{invitation_id}/resend"): ADMINS,
    ("DELETE", "/admin/invitations/{invitation_id}"): ADMINS,
    ("GET", "/admin/auth/invitation"): PUBLIC,
    ("POST", "/admin/auth/invitation"): PUBLIC,
    # API keys and usage.
    ("GET", "/admin/api-keys"): READERS,
    ("POST", "/admin/api-keys"): BUILDERS,
    ("GET", "/admin/api-keys/{key_id}"): READERS,
    ("PATCH", "/admin/api-keys/{key_id}"): BUILDERS,
    ("DELETE", "/admin/api-keys/{key_id}"): BUILDERS,
    ("POST", "/admin/keys/rotate"): BUILDERS,
    ("GET", "/admin/usage"): READERS,
    ("GET", "/admin/usage/thresholds"): READERS,
    ("PUT", "/admin/usage/thresholds"): ADMINS,
    # The request log.
    ("GET", "/admin/logs"): READERS,
    ("GET", "/admin/logs/{request_id}"): READERS,
    # Webhooks.
    ("GET", "/admin/webhooks"): READERS,
    ("POST", "/admin/webhooks"): ADMINS,
    ("GET", "/admin/webhooks/{webhook_id}"): READERS,
    ("PATCH", "/admin/webhooks/{webhook_id}"): ADMINS,
    ("DELETE", "/admin/webhooks/{webhook_id}"): ADMINS,
    ("POST", "/admin/webhooks/{webhook_id}/test"): ADMINS,
    ("POST", "/admin/webhooks/{webhook_id}/rotate-secret"): ADMINS,
    ("GET", "/admin/webhooks/{webhook_id}/deliveries"): READERS,
    ("POST", "/admin/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"): ADMINS,
    # Playground and the realtime view.
    ("POST", "/admin/playground/chat"): BUILDERS,
    ("GET", "/admin/playground/traces"): READERS,
    ("GET", "/admin/playground/trace/{traceId}"): READERS,
    ("GET", "/admin/playground/trace/{traceId}/stream"): READERS,
    ("GET", "/admin/realtime/"): READERS,
    ("GET", "/admin/realtime/trace/{traceId}"): READERS,
    # The tenant's own provider keys (BYOK) and connectors.
    ("GET", "/admin/byok"): READERS,
    ("GET", "/admin/byok/{provider}"): READERS,
    ("PUT", "/admin/byok/{provider}"): ADMINS,
    ("DELETE", "/admin/byok/{provider}"): ADMINS,
    ("GET", "/admin/office_suite/managed-status"): READERS,
    ("POST", "/admin/office_suite/auto-provision"): ADMINS,
    ("GET", "/admin/office_suite/"): READERS,
    ("PATCH", "/admin/office_suite/"): ADMINS,
    ("DELETE", "/admin/office_suite/"): ADMINS,
    ("GET", "/admin/office_suite/bindings"): READERS,
    ("POST", "/admin/office_suite/bindings"): ADMINS,
    ("POST", "/admin/office_suite/bindings/{userId}/rotate"): ADMINS,
    ("DELETE", "/admin/office_suite/bindings/{userId}"): ADMINS,
    ("GET", "/admin/search_provider/managed-status"): READERS,
    ("POST", "/admin/search_provider/auto-provision"): ADMINS,
    ("GET", "/admin/search_provider/"): READERS,
    ("PATCH", "/admin/search_provider/"): ADMINS,
    ("DELETE", "/admin/search_provider/"): ADMINS,
    ("GET", "/admin/search_provider/keys"): READERS,
    ("POST", "/admin/search_provider/keys/{userId}/rotate"): ADMINS,
    ("DELETE", "/admin/search_provider/keys/{userId}"): ADMINS,
    ("GET", "/admin/connectors/health"): READERS,
    # Audit log.
    ("GET", "/admin/audit"): READERS,
    # Single sign-on.
    ("GET", "/admin/sso"): PEOPLE_READERS,
    ("PATCH", "/admin/sso"): ADMINS,
    ("PUT", "/admin/sso/oidc"): ADMINS,
    ("DELETE", "/admin/sso/oidc"): ADMINS,
    ("GET", "/admin/sso/saml"): PEOPLE_READERS,
    ("PUT", "/admin/sso/saml"): ADMINS,
    ("DELETE", "/admin/sso/saml"): ADMINS,
    ("PATCH", "/admin/sso/connections/{protocol}"): ADMINS,
    ("GET", "/admin/sso/enforcement-impact"): PEOPLE_READERS,
    ("GET", "/admin/sso/domains"): PEOPLE_READERS,
    ("POST", "/admin/sso/domains"): ADMINS,
    ("POST", "/admin/sso/domains/{domain}/verify"): ADMINS,
    ("DELETE", "/admin/sso/domains/{domain}"): ADMINS,
    # The platform: every tenant, the routing table, the platform's own pages.
    ("GET", "/admin/platform/tenants"): PLATFORM,
    ("POST", "/admin/platform/tenants"): PLATFORM,
    ("PATCH", "/admin/platform/tenants/{tenant_id}"): PLATFORM,
    ("GET", "/admin/platform/leads"): PLATFORM,
    ("GET", "/admin/platform/agent-platforms"): PLATFORM,
    ("POST", "/admin/platform/agent-platforms"): PLATFORM,
    ("PATCH", "/admin/platform/agent-platforms/{platform_id}"): PLATFORM,
    ("DELETE", "/admin/platform/agent-platforms/{platform_id}"): PLATFORM,
    ("GET", "/admin/platform/agent-orders"): PLATFORM,
    ("PATCH", "/admin/platform/agent-orders/{order_id}"): PLATFORM,
    ("POST", "/admin/platform/agent-orders/{order_id}/refund"): PLATFORM,
    ("GET", "/admin/llm-routing/"): PLATFORM,
    ("PATCH", "/admin/llm-routing/"): PLATFORM,
    ("DELETE", "/admin/llm-routing/"): PLATFORM,
    ("POST", "/admin/csp-report/"): PUBLIC,  # browsers send reports without credentials
    ("GET", "/admin/csp-report/aggregate"): PLATFORM,
    # Billing (under the configured segment).
    ("POST", f"{BILLING}/create-checkout"): BILLERS,
    ("POST", f"{BILLING}/consulting-checkout"): BILLERS,
    ("POST", f"{BILLING}/workspace-checkout"): BILLERS,
    ("POST", f"{BILLING}/hardware-checkout"): BILLERS,
    ("POST", f"{BILLING}/checkout"): BILLERS,
    ("POST", f"{BILLING}/exchange-redirect"): BILLERS,
    ("POST", f"{BILLING}/customer"): BILLERS,
    ("GET", f"{BILLING}/status"): BILLERS,
    ("POST", f"{BILLING}/billing-portal"): BILLERS,
    ("GET", f"{BILLING}/invoices"): BILLERS,
    ("POST", f"{BILLING}/subscription"): BILLERS,
    ("POST", f"{BILLING}/multi-year-schedule"): BILLERS,
    ("GET", f"{BILLING}/multi-year-schedule"): BILLERS,
    ("POST", f"{BILLING}/sync-models"): PLATFORM,
    # Dashboard: signing in, registration, links from mail.
    ("GET", "/app/login"): PUBLIC,
    ("POST", "/app/login"): PUBLIC,
    ("POST", "/app/session"): PUBLIC,
    ("POST", "/app/login/sso"): PUBLIC,
    ("GET", "/app/login/sso/finish"): PUBLIC,
    ("GET", "/app/register"): PUBLIC,
    ("POST", "/app/register"): PUBLIC,
    ("GET", "/app/register/verify"): PUBLIC,
    ("POST", "/app/register/verify"): PUBLIC,
    ("GET", "/app/password/forgot"): PUBLIC,
    ("POST", "/app/password/forgot"): PUBLIC,
    ("GET", "/app/password/reset"): PUBLIC,
    ("POST", "/app/password/reset"): PUBLIC,
    ("GET", "/app/invitations/accept"): PUBLIC,
    ("POST", "/app/invitations/accept"): PUBLIC,
    # Dashboard: one's own account.
    ("POST", "/app/logout"): SELF,
    ("GET", "/app/oauth/consent"): READERS,
    ("POST", "/app/oauth/consent"): BUILDERS,  # an app acting for a person uses the gateway like a key
    ("GET", "/app/connected-apps"): SELF,  # one's own consents (docs/oauth.md)
    ("POST", "/app/connected-apps/disconnect"): SELF,
    ("GET", "/admin/oauth/apps"): SELF,
    ("DELETE", "/admin/oauth/apps"): SELF,
    ("GET", "/app/account"): SELF,
    ("POST", "/app/account/password"): SELF,
    ("POST", "/app/account/sign-out"): SELF,
    ("POST", "/app/account/leave"): SELF,
    ("GET", "/app/passkeys"): SELF,
    ("POST", "/app/passkeys/options"): SELF,
    ("POST", "/app/passkeys"): SELF,
    ("POST", "/app/passkeys/{passkey_id}/rename"): SELF,
    ("POST", "/app/passkeys/{passkey_id}/delete"): SELF,
    # Dashboard: the organisation.
    ("GET", "/app"): READERS,
    ("GET", "/app/keys"): READERS,
    ("POST", "/app/keys"): BUILDERS,
    ("GET", "/app/keys/{key_id}/revoke"): READERS,
    ("POST", "/app/keys/{key_id}/revoke"): BUILDERS,
    ("POST", "/app/keys/{key_id}/rotate"): BUILDERS,
    ("GET", "/app/keys/{key_id}"): READERS,
    ("POST", "/app/keys/{key_id}"): BUILDERS,
    ("GET", "/app/keys/{key_id}/rotate"): READERS,
    ("GET", "/app/usage"): READERS,
    ("POST", "/app/usage/thresholds"): ADMINS,
    ("GET", "/app/logs"): READERS,
    ("GET", "/app/logs/{request_id}"): READERS,
    ("GET", "/app/batches"): READERS,
    ("GET", "/app/files/{file_id}/content"): READERS,
    ("POST", "/app/batches/{batch_id}/cancel"): BUILDERS,
    ("GET", "/app/webhooks"): READERS,
    ("POST", "/app/webhooks"): ADMINS,
    ("GET", "/app/webhooks/{webhook_id}"): READERS,
    ("POST", "/app/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"): ADMINS,
    ("POST", "/app/webhooks/{webhook_id}/edit"): ADMINS,
    ("POST", "/app/webhooks/{webhook_id}/state"): ADMINS,
    ("POST", "/app/webhooks/{webhook_id}/test"): ADMINS,
    ("POST", "/app/webhooks/{webhook_id}/rotate-secret"): ADMINS,
    ("GET", "/app/webhooks/{webhook_id}/delete"): READERS,
    ("POST", "/app/webhooks/{webhook_id}/delete"): ADMINS,
    ("GET", "/app/provider-keys"): READERS,
    ("POST", "/app/provider-keys/{provider}"): ADMINS,
    ("GET", "/app/provider-keys/{provider}/delete"): READERS,
    ("POST", "/app/provider-keys/{provider}/delete"): ADMINS,
    ("GET", "/app/playground"): READERS,
    ("POST", "/app/playground"): BUILDERS,
    ("GET", "/app/playground/trace/{trace_id}"): READERS,
    ("GET", "/app/playground/trace/{trace_id}/stream"): READERS,
    ("GET", "/app/audit"): READERS,
    ("GET", "/app/sso"): PEOPLE_READERS,
    ("POST", "/app/sso/oidc"): ADMINS,
    ("POST", "/app/sso/saml"): ADMINS,
    ("POST", "/app/sso/connections/{protocol}"): ADMINS,
    ("GET", "/app/sso/{protocol}/delete"): PEOPLE_READERS,
    ("POST", "/app/sso/{protocol}/delete"): ADMINS,
    ("POST", "/app/sso/domains"): ADMINS,
    ("POST", "/app/sso/domains/{domain}/verify"): ADMINS,
    ("GET", "/app/sso/domains/{domain}/delete"): PEOPLE_READERS,
    ("POST", "/app/sso/domains/{domain}/delete"): ADMINS,
    ("GET", "/app/sso/enforcement"): PEOPLE_READERS,
    ("POST", "/app/sso/enforcement"): ADMINS,
    ("GET", "/app/members"): PEOPLE_READERS,
    ("POST", "/app/members/invitations"): ADMINS,
    ("POST", "/app/members/invitations/{invitation_id}/resend"): ADMINS,
    ("POST", "/app/members/invitations/{invitation_id}/revoke"): ADMINS,
    ("POST", "/app/members/{user_id}/role"): ADMINS,
    ("POST", "/app/members/{user_id}/remove"): ADMINS,
    ("POST", "/app/members/{user_id}/transfer"): OWNERS,
    ("GET", "/app/billing"): BILLERS,
    ("POST", "/app/billing/checkout"): BILLERS,
    ("POST", "/app/billing/plan"): BILLERS,
    ("POST", "/app/billing/subscription"): BILLERS,
    ("POST", "/app/billing/portal"): BILLERS,
    ("GET", "/app/routing"): PLATFORM,
    ("POST", "/app/routing"): PLATFORM,
    ("GET", "/app/tenants"): PLATFORM,
    ("POST", "/app/tenants"): PLATFORM,
    ("GET", "/app/leads"): PLATFORM,
    ("GET", "/app/agent-commerce"): PLATFORM,
    ("POST", "/app/agent-commerce/platforms"): PLATFORM,
    ("POST", "/app/agent-commerce/platforms/{platform_id}/revoke"): PLATFORM,
    ("POST", "/app/agent-commerce/platforms/{platform_id}/webhook"): PLATFORM,
    ("POST", "/app/agent-commerce/orders/{order_id}/status"): PLATFORM,
    ("POST", "/app/agent-commerce/orders/{order_id}/refund"): PLATFORM,
}
# fmt: on


def _full_templates(app: Any) -> dict[int, str]:
    """Each route's whole path template, prefixes of included routers too (``scope["route"]`` is the
    route as its router declared it, without the prefix it was included under). Built once per app
    and again when a deferred group of routes has been built since (http_facade/deferred_routes.py)."""
    routes = app.router.routes
    count, templates = getattr(app.state, _TEMPLATES, (-1, {}))
    if count != len(routes):
        found: dict[int, set[str]] = {}
        for context in iter_route_contexts(routes):
            if context.path_format:
                found.setdefault(id(context.original_route), set()).add(context.path_format)
        templates = {key: paths.pop() for key, paths in found.items() if len(paths) == 1}
        setattr(app.state, _TEMPLATES, (len(routes), templates))
    return templates


def template_of(request: Request) -> str:
    """The matched route's path template as the table spells it (billing under ``/{billing}``, the
    connectors under their neutral segments)."""
    route = request.scope.get("route")
    template = _full_templates(request.app).get(id(route)) or getattr(route, "path_format", request.url.path)
    billing = getattr(request.app.state, "billing", None)
    prefix = f"/{billing.segment}/" if billing is not None else None
    if prefix and template.startswith(prefix):
        return BILLING + template[len(prefix) - 1 :]
    settings = request.app.state.services.settings
    for segment, neutral in (
        (settings.office_suite_path_segment, "office_suite"),
        (settings.search_provider_path_segment, "search_provider"),
    ):
        mapped = f"/admin/{segment}/"
        if segment != neutral and template.startswith(mapped):
            return f"/admin/{neutral}/" + template[len(mapped) :]
    return template


def access_for(method: str, template: str) -> Access:
    """The entry for a route; a route without one is open to nobody."""
    return ROUTE_POLICY.get(("GET" if method == "HEAD" else method, template), NOBODY)


def allows(claims: AdminClaims, method: str, template: str) -> bool:
    """Whether ``claims`` may call the route (the dashboard's navigation shows only such pages)."""
    return access_for(method, template).allows(claims)


async def authorize(request: Request, token: str | None) -> AdminClaims:
    """The live session of ``token`` if the policy lets it call the matched route: 401 without a
    live session, 403 ``role_not_allowed`` otherwise."""
    template = template_of(request)
    access = access_for(request.method, template)
    return await request.app.state.gateway.authorize_admin(token, access, f"{request.method} {template}")
