"""What every dashboard route shares: the route class, the session dependency, forms and ``page``.

``DashboardRoute`` turns a missing or ended session into a redirect to the sign-in page, marks every
answer ``Cache-Control: no-store`` (signed-in pages show the tenant's data, some show secrets) and
sends the CSRF nonce a page's forms were signed with. Errors are pages, as on every page route.
Which role may open which page is the route policy's (``http_facade/role_policy.py``), checked by
``SessionDep``; the navigation shows only the pages the session's role may open.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from agent_server.gateway.tokens import AdminClaims
from http_facade.deps import client_ip
from http_facade.pages.dashboard.csrf import check_csrf, csrf_token, set_nonce_cookie
from http_facade.pages.dashboard.session import (
    APP_PATH,
    ElsewhereFirst,
    Session,
    SignInNeeded,
    current_session,
    end_session,
    login_url,
)
from http_facade.pages.openapi import ERROR_TEXT, HTML_TEXT, SITE_ERROR
from http_facade.pages.route import PageRoute
from http_facade.pages.templating import render
from http_facade.role_policy import allows
from http_facade.routes.admin_common import Actor

NO_STORE = {"Cache-Control": "no-store"}
# (path, label): the dashboard's navigation; the routing table is for platform admins only.
APP_NAV: tuple[tuple[str, str], ...] = (
    (APP_PATH, "Overview"),
    (f"{APP_PATH}/keys", "API keys"),
    (f"{APP_PATH}/usage", "Usage"),
    (f"{APP_PATH}/logs", "Requests"),
    (f"{APP_PATH}/batches", "Batches"),
    (f"{APP_PATH}/webhooks", "Webhooks"),
    (f"{APP_PATH}/playground", "Playground"),
    (f"{APP_PATH}/billing", "Plan and billing"),
    (f"{APP_PATH}/audit", "Audit log"),
    (f"{APP_PATH}/passkeys", "Passkeys"),
    (f"{APP_PATH}/sso", "Single sign-on"),
    (f"{APP_PATH}/provider-keys", "Provider keys"),
    (f"{APP_PATH}/members", "Members"),
    (f"{APP_PATH}/account", "Account"),
    (f"{APP_PATH}/connected-apps", "Connected apps"),
)
PLATFORM_NAV: tuple[tuple[str, str], ...] = (
    (f"{APP_PATH}/routing", "LLM routing"),
    (f"{APP_PATH}/tenants", "Tenants"),
    (f"{APP_PATH}/leads", "Discovery calls"),
    (f"{APP_PATH}/agent-commerce", "Agent commerce"),
)
ACCOUNT_PAGE = f"{APP_PATH}/account"  # where a session without an organisation or a role lands
# How the navigation is grouped (about 14 entries fit: a sidebar at 1280 px, a menu at 375 px). An
# entry of APP_NAV or PLATFORM_NAV whose path no group names is listed under "More".
NAV_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (group, tuple(f"{APP_PATH}{tail}" for tail in tails))
    for group, tails in (
        ("Build", ("", "/keys", "/playground", "/webhooks")),
        ("Watch", ("/usage", "/logs", "/batches", "/audit")),
        ("Organisation", ("/members", "/billing", "/sso", "/provider-keys")),
        ("Your account", ("/account", "/passkeys", "/connected-apps")),
        ("Platform", ("/routing", "/tenants", "/leads", "/agent-commerce")),
    )
)
DASHBOARD_ERROR_TEXT = {
    **ERROR_TEXT,
    401: "The sign-in (or the token handed over) is not valid.",
    403: "A form without this browser's CSRF token, or an action the session may not take.",
    409: "The change conflicts with the current state (a name taken, an edit that came first).",
}


class DashboardRoute(PageRoute):
    redisplay_for_everyone = True

    def check_before_redisplay(self, request: Request, raw: FormData) -> None:
        """A refused form is shown again only to the page that sent it (its CSRF token), like any action."""
        token = raw.get("csrf_token")
        check_csrf(request, token if isinstance(token, str) else "")

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def dashboard_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInNeeded as needed:
                response = RedirectResponse(login_url(needed.next_path), status_code=303)
                end_session(response, request.app.state.services.settings)
            except ElsewhereFirst as refused:
                response = RedirectResponse(landing(refused.claims), status_code=303)
            response.headers.update(NO_STORE)
            set_nonce_cookie(request, response)
            return response

        return dashboard_handler


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Error answers of a dashboard route in ``/openapi.json``: a page for a browser, the site envelope
    for a program (403 always: every form checks its CSRF token)."""
    return {
        status: {
            "description": DASHBOARD_ERROR_TEXT[status],
            "content": {"application/json": {"schema": SITE_ERROR}, "text/html": HTML_TEXT},
        }
        for status in sorted({400, 403, *statuses})
    }


SEE_OTHER: dict[int | str, dict[str, Any]] = {
    303: {"description": "Without a session: to /app/login?next=…; after a form: to the page of its result."}
}


def dashboard_router() -> APIRouter:
    return APIRouter(
        tags=["dashboard"],
        route_class=DashboardRoute,
        default_response_class=HTMLResponse,
        responses=SEE_OTHER,
    )


class DashboardForm(BaseModel):
    """A dashboard form: its fields and the CSRF token (checked by ``checked``, not by validation,
    so a missing token is the same 403 as a wrong one)."""

    model_config = ConfigDict(extra="forbid")

    csrf_token: str = Field(default="", max_length=128)


def checked(request: Request, form: DashboardForm) -> None:
    check_csrf(request, form.csrf_token)


SessionDep = Annotated[Session, Depends(current_session)]


def actor_of(request: Request, session: Session) -> Actor:
    """The session as the admin routes' ``Actor``, for the services (and route functions) they share."""
    claims = session.claims
    return Actor(claims.user_id, claims.tenant_id, claims.permissions, client_ip(request), session.role)


def nav_for(claims: AdminClaims) -> tuple[tuple[str, str], ...]:
    """The navigation entries whose pages the route policy lets these claims open."""
    return tuple(entry for entry in (*APP_NAV, *PLATFORM_NAV) if allows(claims, "GET", entry[0]))


def landing(claims: AdminClaims) -> str:
    """The first page of a session whose role may not open the overview (billing: the billing page);
    the account page for a person without an organisation or a role."""
    if not claims.tenant_id or claims.role is None:
        return ACCOUNT_PAGE
    return next((href for href, _ in nav_for(claims)), ACCOUNT_PAGE)


def grouped(nav: tuple[tuple[str, str], ...]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The entries of ``nav`` in their groups (``NAV_GROUPS``), empty groups left out."""
    placed = {path for _, paths in NAV_GROUPS for path in paths}
    groups = [
        (name, [entry for path in paths for entry in nav if entry[0] == path]) for name, paths in NAV_GROUPS
    ]
    groups.append(("More", [entry for entry in nav if entry[0] not in placed]))
    return [(name, entries) for name, entries in groups if entries]


def _current(path: str) -> str:
    entries = [href for href, _ in (*APP_NAV, *PLATFORM_NAV)]
    matches = [href for href in entries if path == href or path.startswith(href + "/")]
    return max(matches, key=len, default="")


def when(value: datetime | int | float | str | None) -> str:
    """A time as people read it, ``2026-05-18 10:00 UTC``: from a datetime, Unix seconds or ISO text."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    elif not isinstance(value, datetime):
        value = datetime.fromtimestamp(value, UTC)
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def page(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    session: Session | None = None,
    status: int = 200,
) -> HTMLResponse:
    """``dashboard/<template>`` with the navigation (when signed in) and the forms' CSRF token."""
    values = {
        "csrf": csrf_token(request),
        "session": session,
        "app_nav": nav_for(session.claims) if session is not None else (),
        "app_nav_groups": grouped(nav_for(session.claims)) if session is not None else [],
        "app_current": _current(request.url.path),
        "when": when,
        **(context or {}),
    }
    return render(request, f"dashboard/{template}", values, status, headers=NO_STORE)


def see_other(path: str) -> RedirectResponse:
    """After a form: 303 to the page that shows the result (reloading it sends nothing again)."""
    return RedirectResponse(path, status_code=303)
