"""The dashboard's session and its safety: sign-in and redirects, the cookie, CSRF, sign-out."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi.routing import APIRoute
from sqlalchemy import select

from agent_server.admin.tables import AuditRecord
from agent_server.foundation.settings import Settings
from http_facade.pages.dashboard import AREA_ROUTERS
from http_facade.pages.dashboard.session import safe_next, secure_cookies
from tests.gateway.conftest import PASSWORD
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form

PUBLIC = {"/app/login", "/app/register", "/app/register/verify", "/app/password/forgot", "/app/password/reset",
          "/app/login/sso/finish", "/app/invitations/accept"}  # fmt: skip


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def signed_in_pages() -> list[str]:
    return sorted(
        route.path
        for router in AREA_ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute) and "GET" in route.methods and "{" not in route.path
        and route.path not in PUBLIC
    )  # fmt: skip


def test_the_signed_in_pages_are_all_there() -> None:
    assert signed_in_pages() == [
        "/app", "/app/account", "/app/agent-commerce", "/app/audit", "/app/batches", "/app/billing",
        "/app/connected-apps", "/app/keys", "/app/leads", "/app/logs", "/app/members", "/app/oauth/consent",
        "/app/passkeys", "/app/playground", "/app/provider-keys", "/app/routing", "/app/sso", "/app/sso/enforcement",
        "/app/tenants", "/app/usage", "/app/webhooks",
    ]  # fmt: skip


async def test_without_a_session_every_page_redirects_to_the_sign_in_page(dash: Dash) -> None:
    browser = dash.browser()
    for path in signed_in_pages():
        answer = await browser.get(path, params={"x": "1"})
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/app/login?next={path.replace('/', '%2F')}%3Fx%3D1", path
        assert answer.headers["cache-control"] == "no-store"
    forged = await dash.browser(cookies={"agentgate_session": "not-a-token"}).get("/app/keys")
    assert forged.status_code == 303 and 'agentgate_session=""' in forged.headers["set-cookie"]


async def test_signing_in_sets_a_safe_cookie_and_every_page_renders(dash: Dash) -> None:
    person = await dash.person()
    browser = dash.browser()
    login = await browser.get("/app/login", params={"next": "/app/usage"})
    nonce = login.headers["set-cookie"]
    assert nonce.startswith("agentgate_csrf=") and "HttpOnly" in nonce and "Path=/app" in nonce
    fields = {"email": person.email, "password": PASSWORD, "next": "/app/usage"}
    answer = await browser.post("/app/login", data={"csrf_token": csrf_of(login.text), **fields})
    assert answer.status_code == 303 and answer.headers["location"] == "/app/usage"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("agentgate_session=ey") and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Path=/app" in cookie and "Secure" not in cookie  # plain http on loopback only
    for path in signed_in_pages():
        page = await browser.get(path)
        expected = (
            403 if path in ("/app/routing", "/app/tenants", "/app/leads", "/app/agent-commerce") else 200
        )  # platform admins only
        expected = 400 if path == "/app/oauth/consent" else expected  # no authorization request to show
        assert page.status_code == expected, (path, page.text[:300])
        assert page.headers["cache-control"] == "no-store", path
        assert "default-src 'self'" in page.headers["content-security-policy"], path
    assert (await browser.get("/app/login")).headers["location"] == "/app"  # signed in already


def test_cookies_are_secure_except_on_plain_http_loopback(settings: Settings) -> None:
    for url, secure in (("http://127.0.0.1:8000", False), ("http://localhost:8000", False),
                        ("http://[::1]:8000", False), ("https://gw.example", True),
                        ("http://gw.example", True), ("http://10.0.0.5:8000", True)):  # fmt: skip
        assert secure_cookies(settings.model_copy(update={"public_base_url": url})) is secure, url


@pytest.mark.parametrize(
    ("wanted", "goes_to"),
    [("/app/keys?x=1", "/app/keys?x=1"), ("//evil.example/app", "/app"), ("https://evil.example", "/app"),
     ("/app/../admin", "/app/../admin"), ("/application", "/app"), ("/app\\evil", "/app"), ("", "/app"), ("/app/login?next=/app", "/app")],
)  # fmt: skip
def test_after_sign_in_only_dashboard_paths_are_followed(wanted: str, goes_to: str) -> None:
    assert safe_next(wanted) == goes_to


async def test_a_wrong_password_shows_the_form_again_and_is_audited(dash: Dash) -> None:
    person = await dash.person()
    browser = dash.browser()
    answer = await post_form(browser, "/app/login", "/app/login", email=person.email, password="wrong " * 3)
    assert answer.status_code == 401 and "agentgate_session" not in answer.headers.get("set-cookie", "")
    assert 'data-test="form-error"' in answer.text and "invalid_credentials" in answer.text
    assert f'value="{person.email}"' in answer.text  # the address stays, the password does not
    async with dash.app.state.services.db.session() as session:
        actions = (await session.execute(select(AuditRecord.action, AuditRecord.tenant_id))).all()
    assert ("auth.login_failed", person.tenant_id) in actions


async def test_forms_refuse_a_missing_or_foreign_csrf_token(dash: Dash) -> None:
    person, other = await dash.person(), await dash.person()
    browser, stranger = await dash.signed_in(person), await dash.signed_in(other)
    foreign = csrf_of((await stranger.get("/app/keys")).text)  # valid, for another session
    own = csrf_of((await browser.get("/app/keys")).text)
    for token in ("", "0" * 64, foreign):
        refused = await browser.post("/app/keys", data={"csrf_token": token, "name": "k", "scopes": "chat"})
        assert refused.status_code == 403 and "csrf_token_invalid" in refused.text, token
        assert 'data-test="secret-value"' not in refused.text
    hook = {"url": "https://example.com/h", "events": "key.rotated"}
    for action, fields in (("/app/logout", {}), ("/app/keys/key_x/revoke", {}), ("/app/webhooks", hook)):
        assert (await browser.post(action, data=fields)).status_code == 403, action
    no_nonce = await dash.browser().post(
        "/app/login", data={"csrf_token": own, "email": "a@b.c", "password": "x"}
    )
    assert no_nonce.status_code == 403  # a token without the browser's nonce cookie
    made = await browser.post("/app/keys", data={"csrf_token": own, "name": "k", "scopes": "chat"})
    assert made.status_code == 200 and 'data-test="secret-value"' in made.text


async def test_the_session_cookie_does_not_authenticate_the_json_api(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    token = browser.cookies["agentgate_session"]
    refused = await dash.browser(cookies={"agentgate_session": token}).get("/admin/api-keys")
    assert refused.status_code == 401
    allowed = await browser.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
    assert allowed.status_code == 200


async def test_sign_out_ends_the_session_everywhere_and_clears_the_cookie(dash: Dash) -> None:
    person = await dash.person()
    browser, laptop = await dash.signed_in(person), await dash.signed_in(person, "10.0.0.2")
    token = browser.cookies["agentgate_session"]
    out = await post_form(browser, "/app", "/app/logout")
    assert out.status_code == 303 and out.headers["location"] == "/app/login?signed_out=1"
    assert 'agentgate_session=""' in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
    assert "You are signed out" in (await browser.get(out.headers["location"])).text
    assert (await browser.get("/app/keys")).status_code == 303
    assert (await laptop.get("/app/keys")).status_code == 303  # every session of the user ends
    replayed = await dash.browser(cookies={"agentgate_session": token}).get("/app/keys")
    assert replayed.status_code == 303
    json_api = await browser.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
    assert json_api.status_code == 401


async def test_a_member_without_admin_rights_is_refused(dash: Dash) -> None:
    member = await dash.person(permissions=("tenant:member",))
    browser = dash.browser()
    answer = await post_form(browser, "/app/login", "/app/login", email=member.email, password=PASSWORD)
    assert answer.status_code == 303
    assert (await browser.get("/app/keys")).status_code == 403
