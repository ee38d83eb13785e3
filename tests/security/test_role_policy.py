"""The route policy (http_facade/role_policy.py) covers every route, says what docs/accounts.md says,
and is what the app enforces: every route of the admin API, the billing API and the dashboard is
called as every role, and each answer must be a refusal (403 ``role_not_allowed``: the gateway
envelope on JSON routes, an HTML page on /app) exactly when the table refuses that role.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from agent_server.accounts import roles
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import User
from http_facade.pages.dashboard.route import APP_NAV, PLATFORM_NAV, landing
from http_facade.role_policy import BILLING, ROUTE_POLICY, access_for
from http_facade.routes.wellknown import _asks_for_jwt
from tests.pages.dashboard import Dash, csrf_of, dashboard_world

# Whose session a call ends or whose membership it changes: called last, each with a fresh session.
ENDS_THE_SESSION = [
    ("POST", "/admin/auth/logout"),
    ("POST", "/app/logout"),
    ("POST", "/app/account/sign-out"),
    ("DELETE", "/admin/membership"),
    ("POST", "/app/account/leave"),
]
PARAMS = {"domain": "unknown.example", "provider": "unknown-provider"}


def routes_of(app: FastAPI) -> set[tuple[str, str]]:
    """(method, template as the table spells it) of every route the policy must cover: everything under
    /admin and /app, and every other route that asks for the admin JWT (billing)."""
    segment = f"/{app.state.billing.segment}/"
    found = set()
    for context in iter_route_contexts(app.routes):
        path, route = context.path_format, context.original_route
        if not path or not context.methods:
            continue
        jwt = isinstance(route, APIRoute) and _asks_for_jwt(route.dependant)
        if path.startswith(("/admin", "/app")) or jwt:
            template = BILLING + path[len(segment) - 1 :] if path.startswith(segment) else path
            found.update((method, template) for method in context.methods if method != "HEAD")
    return found


def suggestion(method: str, template: str) -> str:
    level = "READERS" if method == "GET" else "ADMINS"
    return f'    ("{method}", "{template}"): {level},'


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_every_route_has_an_entry_and_every_entry_a_route(dash: Dash) -> None:
    found = routes_of(dash.app)
    assert len(found) > 150 and ("POST", f"{BILLING}/subscription") in found
    missing = sorted(found - set(ROUTE_POLICY))
    assert not missing, (
        "These routes have no entry in ROUTE_POLICY (http_facade/role_policy.py), so nobody may call "
        "them. Add these lines there (the level is a guess: READERS reads the tenant's data, BUILDERS "
        "writes keys, ADMINS its settings, SELF one's own account, PUBLIC needs no sign-in; see the "
        "role table in docs/accounts.md):\n" + "\n".join(suggestion(m, t) for m, t in missing)
    )
    stale = sorted(set(ROUTE_POLICY) - found)
    assert not stale, "Entries of ROUTE_POLICY without a route; delete these lines:\n" + "\n".join(
        suggestion(m, t) for m, t in stale
    )


def test_the_table_gives_each_role_what_docs_accounts_md_says() -> None:
    """Over every role-based entry: viewers read all but billing; developers read all but billing,
    members and SSO, and write keys and the playground; billing has billing only; admins everything
    but ownership; owners everything."""
    wrong = []
    for (method, template), access in ROUTE_POLICY.items():
        if access.public or access.signed_in or access.platform:
            continue
        expected = {
            roles.OWNER: True,
            roles.ADMIN: access is not roles.OWNERS,
            roles.VIEWER: method == "GET" and access is not roles.BILLERS,
            roles.BILLING: access is roles.BILLERS,
            roles.DEVELOPER: access is roles.BUILDERS
            or (method == "GET" and access not in (roles.BILLERS, roles.PEOPLE_READERS)),
        }
        wrong += [
            f"{role} {method} {template}" for role, ok in expected.items() if (role in access.roles) != ok
        ]
    assert not wrong, wrong
    assert ROUTE_POLICY[("POST", "/admin/ownership/transfer")] is roles.OWNERS
    platform = [key for key, access in ROUTE_POLICY.items() if access is roles.PLATFORM]
    assert {
        ("GET", "/app/routing"),
        ("PATCH", "/admin/llm-routing/"),
        ("GET", "/admin/platform/tenants"),
    } <= set(platform)


@dataclass
class Persona:
    name: str
    user_id: str
    token: str = ""
    csrf: str = ""


async def personas(dash: Dash) -> list[Persona]:
    """A member of each role in one Enterprise organisation, one without a role, a person of no
    organisation, and a platform administrator whose role there is viewer."""
    db, now = dash.app.state.services.db, dash.clock.now()
    tenant = await repo.create_tenant(db, now, "Policy Org", "enterprise")
    people: list[tuple[str, str | None, list[str], str | None]] = [
        *((role, role, [], tenant.id) for role in roles.ROLES),
        ("no-role", None, [], tenant.id),
        ("no-organisation", None, [], None),
        ("platform", roles.VIEWER, [roles.PLATFORM_ADMIN], tenant.id),
    ]
    made = []
    for name, role, permissions, tenant_id in people:
        user = repo.new_user(now, tenant.id, f"{name}@policy.example", None, permissions, role)
        user.tenant_id = tenant_id
        await repo.add_user(db, user)
        made.append(Persona(name, user.id))
    return made


async def sign_in(dash: Dash, browser: httpx.AsyncClient, persona: Persona) -> None:
    """A fresh session of the persona as it is now (a new token from its row), and its CSRF token."""
    async with dash.app.state.services.db.session() as session:
        user = await session.get(User, persona.user_id)
    assert user is not None
    persona.token = dash.app.state.gateway.sessions.issue(user).access_token
    browser.cookies.clear()
    browser.cookies.set("agentgate_session", persona.token, domain="127.0.0.1", path="/app")
    account = await browser.get("/app/account")
    assert account.status_code == 200, (persona.name, account.status_code)
    persona.csrf = csrf_of(account.text)


async def call(
    dash: Dash, browser: httpx.AsyncClient, persona: Persona, method: str, template: str
) -> httpx.Response:
    if template.startswith(BILLING):
        template = f"/{dash.app.state.billing.segment}{template[len(BILLING) :]}"
    url = re.sub(r"\{(\w+)\}", lambda m: PARAMS.get(m.group(1), "unknown_id"), template)
    if template.startswith("/app"):
        form = {"csrf_token": persona.csrf} if method == "POST" else None
        return await browser.request(method, url, data=form)
    headers = {"Authorization": f"Bearer {persona.token}", "Accept": "application/json"}
    body = {} if method in ("POST", "PUT", "PATCH") else None
    return await browser.request(method, url, headers=headers, json=body)


def judged(answer: httpx.Response, template: str) -> str:
    """What the answer says about the policy: refused, allowed, or a problem to report."""
    if answer.status_code == 403:
        if template.startswith("/app"):
            html = answer.headers["content-type"].startswith("text/html")
            return (
                "refused" if html and "role_not_allowed" in answer.text else f"other 403 {answer.text[:150]}"
            )
        code = answer.json()["error"]["code"]
        return "refused" if code == "role_not_allowed" else f"other 403: {code}"
    if answer.status_code >= 500 or answer.status_code == 401:
        return f"status {answer.status_code}: {answer.text[:150]}"
    location = answer.headers.get("location", "")
    if (
        answer.status_code in (302, 303)
        and location.startswith("/app/login")
        and "signed_out" not in location
    ):
        return "sent to sign in"
    return "allowed"


async def test_every_role_gets_exactly_what_the_table_says_on_every_route(dash: Dash) -> None:
    people = await personas(dash)
    routes = sorted(
        (key for key in routes_of(dash.app) if not access_for(*key).public and key not in ENDS_THE_SESSION),
        key=lambda r: (r[0] == "DELETE", r),
    )
    problems: list[str] = []
    for persona in people:
        browser = dash.browser()
        await sign_in(dash, browser, persona)
        claims = await dash.app.state.gateway.authenticate_user(persona.token)
        for method, template in [*routes, *ENDS_THE_SESSION]:
            if (method, template) in ENDS_THE_SESSION:
                await sign_in(dash, browser, persona)
            answer = await call(dash, browser, persona, method, template)
            allowed = access_for(method, template).allows(claims)
            verdict = judged(answer, template)
            if (method, template) == ("GET", "/app") and not allowed:  # the overview sends elsewhere
                if answer.status_code != 303 or answer.headers["location"] != landing(claims):
                    problems.append(
                        f"{persona.name} GET /app: {answer.status_code}, not to {landing(claims)}"
                    )
                continue
            if verdict != ("allowed" if allowed else "refused"):
                problems.append(f"{persona.name} {method} {template} -> {answer.status_code}: {verdict}")
    assert not problems, "\n".join(problems)


async def test_the_navigation_shows_exactly_the_pages_each_role_may_open(dash: Dash) -> None:
    for persona in await personas(dash):
        browser = dash.browser()
        await sign_in(dash, browser, persona)
        claims = await dash.app.state.gateway.authenticate_user(persona.token)
        shown = re.findall(r'<a href="(/app[^"]*)" data-test="nav-', (await browser.get("/app/account")).text)
        may = [href for href, _ in (*APP_NAV, *PLATFORM_NAV) if access_for("GET", href).allows(claims)]
        assert sorted(shown) == sorted(may), persona.name  # in their groups (route.py NAV_GROUPS)
        assert ("/app/members" in shown) is (persona.name in ("owner", "admin", "viewer", "platform"))
        assert ("/app/billing" in shown) is (persona.name in ("owner", "admin", "billing"))
        assert "/app/account" in shown
