"""Every admin route a tenant's administrator can call has a dashboard page that does the same, so the
dashboard and the JSON API cannot drift apart again.

**The rule.** A route is *tenant-callable* when its path starts with ``/admin`` and its dependencies
include the admin JWT check (``admin_claims``: a signed-in administrator of an organisation) but not
``platform_actor`` (``platform:admin`` only). That leaves out, by construction, the public routes
(sign-in, password reset, passkey sign-in, the CSP report collector: no admin JWT), the signed-in
user's own session routes (sign-out and password change use ``user_claims``, not an organisation's
administration) and the platform's routes (LLM routing, the tenant list, the CSP aggregate).

``API_TO_PAGE`` maps each such route (method and path template, as in ``app.routes``) to the
dashboard route (method and path template under ``/app``) that calls the same function. A read may
map to the page that shows it (``GET /admin/webhooks/{webhook_id}/deliveries`` to the webhook's page).
``NO_PAGE_YET`` lists, with the reason, the routes that have no page on purpose for now; it may only
shrink. The test fails naming every tenant-callable route in neither, every map entry whose page route
does not exist, and every entry of either that is no longer a route.

The platform administrator's routes (``platform_actor``) have the same rule in
``PLATFORM_API_TO_PAGE`` and ``PLATFORM_NO_PAGE_YET``: the platform pages (tenants, LLM routing,
discovery calls, agent commerce) call the same functions.
"""

from __future__ import annotations

import tempfile

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from agent_server.foundation.settings import Settings
from http_facade.app import create_app

Route = tuple[str, str]
TENANT_ADMIN, PLATFORM_ADMIN = "admin_claims", "platform_actor"

API_TO_PAGE: dict[Route, Route] = {
    # API keys (docs/models-and-keys.md)
    ("GET", "/admin/api-keys"): ("GET", "/app/keys"),
    ("POST", "/admin/api-keys"): ("POST", "/app/keys"),
    ("GET", "/admin/api-keys/{key_id}"): ("GET", "/app/keys/{key_id}"),
    ("PATCH", "/admin/api-keys/{key_id}"): ("POST", "/app/keys/{key_id}"),
    ("DELETE", "/admin/api-keys/{key_id}"): ("POST", "/app/keys/{key_id}/revoke"),
    ("POST", "/admin/keys/rotate"): ("POST", "/app/keys/{key_id}/rotate"),
    ("GET", "/admin/usage"): ("GET", "/app/usage"),
    # The request log (docs/request-log.md)
    ("GET", "/admin/logs"): ("GET", "/app/logs"),
    ("GET", "/admin/logs/{request_id}"): ("GET", "/app/logs/{request_id}"),
    # Members and invitations (docs/accounts.md, "Members and roles")
    ("GET", "/admin/members"): ("GET", "/app/members"),
    ("GET", "/admin/members/{user_id}"): ("GET", "/app/members"),
    ("PATCH", "/admin/members/{user_id}"): ("POST", "/app/members/{user_id}/role"),
    ("DELETE", "/admin/members/{user_id}"): ("POST", "/app/members/{user_id}/remove"),
    ("POST", "/admin/ownership/transfer"): ("POST", "/app/members/{user_id}/transfer"),
    ("GET", "/admin/membership"): ("GET", "/app/account"),
    ("DELETE", "/admin/membership"): ("POST", "/app/account/leave"),
    # Connected apps (docs/oauth.md): the person's own OAuth consents
    ("GET", "/admin/oauth/apps"): ("GET", "/app/connected-apps"),
    ("DELETE", "/admin/oauth/apps"): ("POST", "/app/connected-apps/disconnect"),
    ("GET", "/admin/invitations"): ("GET", "/app/members"),
    ("POST", "/admin/invitations"): ("POST", "/app/members/invitations"),
    ("POST", "/admin/invitations/{invitation_id}/resend"): (
        "POST",
        "/app/members/invitations/{invitation_id}/resend",
    ),
    ("DELETE", "/admin/invitations/{invitation_id}"): (
        "POST",
        "/app/members/invitations/{invitation_id}/revoke",
    ),
    # Provider keys (bring your own key)
    ("GET", "/admin/byok"): ("GET", "/app/provider-keys"),
    ("GET", "/admin/byok/{provider}"): ("GET", "/app/provider-keys"),
    ("PUT", "/admin/byok/{provider}"): ("POST", "/app/provider-keys/{provider}"),
    ("DELETE", "/admin/byok/{provider}"): ("POST", "/app/provider-keys/{provider}/delete"),
    # Webhooks and usage alerts (docs/admin-and-webhooks.md)
    ("GET", "/admin/webhooks"): ("GET", "/app/webhooks"),
    ("POST", "/admin/webhooks"): ("POST", "/app/webhooks"),
    ("GET", "/admin/webhooks/{webhook_id}"): ("GET", "/app/webhooks/{webhook_id}"),
    ("PATCH", "/admin/webhooks/{webhook_id}"): ("POST", "/app/webhooks/{webhook_id}/edit"),
    ("DELETE", "/admin/webhooks/{webhook_id}"): ("POST", "/app/webhooks/{webhook_id}/delete"),
    ("POST", "/admin/webhooks/{webhook_id}/test"): ("POST", "/app/webhooks/{webhook_id}/test"),
    ("POST", "/admin/webhooks/{webhook_id}/rotate-secret"): (
        "POST",
        "/app/webhooks/{webhook_id}/rotate-secret",
    ),
    ("GET", "/admin/webhooks/{webhook_id}/deliveries"): ("GET", "/app/webhooks/{webhook_id}"),
    ("POST", "/admin/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"): (
        "POST",
        "/app/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
    ),
    ("GET", "/admin/usage/thresholds"): ("GET", "/app/webhooks"),
    ("PUT", "/admin/usage/thresholds"): ("POST", "/app/usage/thresholds"),
    # Playground and traces
    ("POST", "/admin/playground/chat"): ("POST", "/app/playground"),
    ("GET", "/admin/playground/traces"): ("GET", "/app/playground"),
    ("GET", "/admin/playground/trace/{traceId}"): ("GET", "/app/playground/trace/{trace_id}"),
    ("GET", "/admin/playground/trace/{traceId}/stream"): ("GET", "/app/playground/trace/{trace_id}/stream"),
    ("GET", "/admin/realtime/trace/{traceId}"): ("GET", "/app/playground/trace/{trace_id}"),
    # Audit log
    ("GET", "/admin/audit"): ("GET", "/app/audit"),
    # Passkeys of the signed-in admin
    ("GET", "/admin/auth/passkeys"): ("GET", "/app/passkeys"),
    ("POST", "/admin/auth/passkeys/options"): ("POST", "/app/passkeys/options"),
    ("POST", "/admin/auth/passkeys"): ("POST", "/app/passkeys"),
    ("PATCH", "/admin/auth/passkeys/{passkey_id}"): ("POST", "/app/passkeys/{passkey_id}/rename"),
    ("DELETE", "/admin/auth/passkeys/{passkey_id}"): ("POST", "/app/passkeys/{passkey_id}/delete"),
    # Single sign-on (docs/accounts.md)
    ("GET", "/admin/sso"): ("GET", "/app/sso"),
    ("PATCH", "/admin/sso"): ("POST", "/app/sso/enforcement"),
    ("GET", "/admin/sso/enforcement-impact"): ("GET", "/app/sso/enforcement"),
    ("PUT", "/admin/sso/oidc"): ("POST", "/app/sso/oidc"),
    ("DELETE", "/admin/sso/oidc"): ("POST", "/app/sso/{protocol}/delete"),
    ("GET", "/admin/sso/saml"): ("GET", "/app/sso"),
    ("PUT", "/admin/sso/saml"): ("POST", "/app/sso/saml"),
    ("DELETE", "/admin/sso/saml"): ("POST", "/app/sso/{protocol}/delete"),
    ("PATCH", "/admin/sso/connections/{protocol}"): ("POST", "/app/sso/connections/{protocol}"),
    ("GET", "/admin/sso/domains"): ("GET", "/app/sso"),
    ("POST", "/admin/sso/domains"): ("POST", "/app/sso/domains"),
    ("POST", "/admin/sso/domains/{domain}/verify"): ("POST", "/app/sso/domains/{domain}/verify"),
    ("DELETE", "/admin/sso/domains/{domain}"): ("POST", "/app/sso/domains/{domain}/delete"),
}

_CONNECTORS = "connectors: no dashboard page yet (not part of the dashboard issue's list; the lead decides)"
NO_PAGE_YET: dict[Route, str] = {
    ("GET", "/admin/realtime/"): "live per-model figures of the last minutes: no page shows them yet",
    ("GET", "/admin/connectors/health"): _CONNECTORS,
    **{
        (method, f"/admin/{kind}{path}"): _CONNECTORS
        for kind, credentials in (("office_suite", "bindings"), ("search_provider", "keys"))
        for method, path in (
            ("GET", "/managed-status"),
            ("POST", "/auto-provision"),
            ("GET", "/"),
            ("PATCH", "/"),
            ("DELETE", "/"),
            ("GET", f"/{credentials}"),
            ("POST", f"/{credentials}/{{userId}}/rotate"),
            ("DELETE", f"/{credentials}/{{userId}}"),
        )
    },
    ("POST", "/admin/office_suite/bindings"): _CONNECTORS,
}


def app() -> FastAPI:
    return create_app(Settings(data_dir=tempfile.mkdtemp(), redis_url=None, database_url=None))


def dependencies(route: APIRoute) -> set[str]:
    found: set[str] = set()
    todo = list(route.dependant.dependencies)
    while todo:
        dependency = todo.pop()
        found.add(getattr(dependency.call, "__name__", ""))
        todo.extend(dependency.dependencies)
    return found


def routes(application: FastAPI, prefix: str) -> dict[Route, APIRoute]:
    found = {}
    for context in iter_route_contexts(application.routes):
        if context.path_format.startswith(prefix) and isinstance(context.route, APIRoute):
            for method in context.methods or ():
                if method != "HEAD":
                    found[(method, context.path_format)] = context.route
    return found


def tenant_callable(application: FastAPI) -> set[Route]:
    return {
        key
        for key, route in routes(application, "/admin").items()
        if TENANT_ADMIN in (names := dependencies(route)) and PLATFORM_ADMIN not in names
    }


def test_every_tenant_admin_route_has_its_dashboard_page() -> None:
    application = app()
    tenant_routes = tenant_callable(application)
    # The rule still finds what it is about (a renamed dependency would silently find nothing).
    assert len(tenant_routes) >= 60 and ("GET", "/admin/webhooks") in tenant_routes
    assert ("GET", "/admin/platform/tenants") not in tenant_routes and (
        "POST",
        "/admin/auth/login",
    ) not in tenant_routes

    missing = sorted(tenant_routes - set(API_TO_PAGE) - set(NO_PAGE_YET))
    assert not missing, (
        "tenant admin routes without a dashboard page; add a line to API_TO_PAGE for each:\n"
        + "\n".join(f'    ("{method}", "{path}"): ("<METHOD>", "/app/…"),' for method, path in missing)
    )
    pages = routes(application, "/app")
    no_page = sorted(f"{api} -> {page}" for api, page in API_TO_PAGE.items() if page not in pages)
    assert not no_page, "API_TO_PAGE names dashboard routes that do not exist:\n" + "\n".join(no_page)
    stale = sorted(str(key) for key in (*API_TO_PAGE, *NO_PAGE_YET) if key not in tenant_routes)
    assert not stale, "entries that are no tenant admin route (any more):\n" + "\n".join(stale)
    both = sorted(str(key) for key in set(API_TO_PAGE) & set(NO_PAGE_YET))
    assert not both, f"routes with a page that are still listed in NO_PAGE_YET: {both}"


# The platform administrator's routes (``platform_actor``) and the platform pages that do the same.
PLATFORM_API_TO_PAGE: dict[Route, Route] = {
    ("GET", "/admin/platform/tenants"): ("GET", "/app/tenants"),
    ("POST", "/admin/platform/tenants"): ("POST", "/app/tenants"),
    ("GET", "/admin/platform/leads"): ("GET", "/app/leads"),
    ("GET", "/admin/llm-routing/"): ("GET", "/app/routing"),
    ("PATCH", "/admin/llm-routing/"): ("POST", "/app/routing"),
    # Agentic commerce (docs/agentic-commerce.md)
    ("GET", "/admin/platform/agent-platforms"): ("GET", "/app/agent-commerce"),
    ("POST", "/admin/platform/agent-platforms"): ("POST", "/app/agent-commerce/platforms"),
    ("DELETE", "/admin/platform/agent-platforms/{platform_id}"): (
        "POST",
        "/app/agent-commerce/platforms/{platform_id}/revoke",
    ),
    ("PATCH", "/admin/platform/agent-platforms/{platform_id}"): (
        "POST",
        "/app/agent-commerce/platforms/{platform_id}/webhook",
    ),
    ("GET", "/admin/platform/agent-orders"): ("GET", "/app/agent-commerce"),
    ("PATCH", "/admin/platform/agent-orders/{order_id}"): (
        "POST",
        "/app/agent-commerce/orders/{order_id}/status",
    ),
    ("POST", "/admin/platform/agent-orders/{order_id}/refund"): (
        "POST",
        "/app/agent-commerce/orders/{order_id}/refund",
    ),
}
PLATFORM_NO_PAGE_YET: dict[Route, str] = {
    (
        "PATCH",
        "/admin/platform/tenants/{tenant_id}",
    ): "changing a tenant: the tenants page lists and creates only",
    ("DELETE", "/admin/llm-routing/"): "resetting the routing table to the configured one: no page yet",
    ("GET", "/admin/csp-report/aggregate"): "the CSP report aggregate: no page shows it yet",
}


def platform_callable(application: FastAPI) -> set[Route]:
    return {
        key for key, route in routes(application, "/admin").items() if PLATFORM_ADMIN in dependencies(route)
    }


def test_every_platform_admin_route_has_its_dashboard_page() -> None:
    application = app()
    platform_routes = platform_callable(application)
    assert ("POST", "/admin/platform/agent-platforms") in platform_routes  # the rule still finds them
    missing = sorted(platform_routes - set(PLATFORM_API_TO_PAGE) - set(PLATFORM_NO_PAGE_YET))
    assert not missing, "platform admin routes without a dashboard page:\n" + "\n".join(map(str, missing))
    pages = routes(application, "/app")
    no_page = sorted(f"{api} -> {page}" for api, page in PLATFORM_API_TO_PAGE.items() if page not in pages)
    assert not no_page, "PLATFORM_API_TO_PAGE names dashboard routes that do not exist:\n" + "\n".join(
        no_page
    )
    stale = sorted(
        str(key) for key in (*PLATFORM_API_TO_PAGE, *PLATFORM_NO_PAGE_YET) if key not in platform_routes
    )
    assert not stale, "entries that are no platform admin route (any more):\n" + "\n".join(stale)
    both = sorted(str(key) for key in set(PLATFORM_API_TO_PAGE) & set(PLATFORM_NO_PAGE_YET))
    assert not both, f"routes with a page that are still listed in PLATFORM_NO_PAGE_YET: {both}"
