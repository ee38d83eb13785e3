"""The dashboard's cookies (docs/security.md, "Dashboard cookies"): ``Secure`` follows the mode, a
production start refuses a plain-http base URL off loopback, the CSRF nonce must be one the service
issued, it is replaced at sign-in and sign-out, and on https it is a ``__Host-`` cookie."""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.errors import DeploymentError
from agent_server.foundation.settings import Settings
from agent_server.gateway.tokens import signing_secret
from http_facade.app import create_app
from tests.gateway.conftest import PASSWORD
from tests.pages.conftest import BROWSER_ACCEPT
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form

PRODUCTION = {"mode": "production", "billing_allow_sandbox_in_production": True}


def set_cookies(answer: httpx.Response) -> dict[str, str]:
    """name → the whole Set-Cookie value, for each cookie the answer sets."""
    return {value.split("=", 1)[0]: value for value in answer.headers.get_list("set-cookie")}


def cookie_value(header: str) -> str:
    return header.split(";", 1)[0].split("=", 1)[1]


def token_for(settings: Settings, nonce: str, session: str = "") -> str:
    """The form token the service's formula gives for ``nonce`` (what an attacker holding the key of a
    planted nonce would need): HMAC(key, nonce | SHA-256(session cookie))."""
    key = hmac.new(signing_secret(settings), b"agentgate dashboard csrf", hashlib.sha256).digest()
    bound = f"{nonce}|{hashlib.sha256(session.encode()).hexdigest()}"
    return hmac.new(key, bound.encode(), hashlib.sha256).hexdigest()


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_production_cookies_are_secure_even_on_loopback(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "agentgate.accounts")
    async with dashboard_world(settings, **PRODUCTION) as dash:
        assert "plain-http AGENTGATE_PUBLIC_BASE_URL on loopback" in caplog.text
        person = await dash.person()
        browser = dash.browser()
        login = await browser.get("/app/login")
        nonce_header = set_cookies(login)["agentgate_csrf"]
        assert "Secure" in nonce_header
        # httpx keeps Secure cookies off plain http, as browsers do: send the nonce by hand.
        answer = await browser.post(
            "/app/login",
            data={"csrf_token": csrf_of(login.text), "email": person.email, "password": PASSWORD},
            headers={"Cookie": f"agentgate_csrf={cookie_value(nonce_header)}"},
        )
        assert answer.status_code == 303
        session = set_cookies(answer)["agentgate_session"]
        assert "Secure" in session and "HttpOnly" in session and "Path=/app" in session


async def test_sandbox_on_plain_http_loopback_keeps_cookies_usable_without_tls(dash: Dash) -> None:
    login = await dash.browser().get("/app/login")
    assert "Secure" not in set_cookies(login)["agentgate_csrf"]


def test_production_refuses_a_plain_http_base_url_off_loopback(settings: Settings) -> None:
    for url in ("http://gw.example", "http://10.0.0.5:8000"):
        wanted = settings.model_copy(update={**PRODUCTION, "public_base_url": url})
        with pytest.raises(DeploymentError, match="plain http"):
            create_app(wanted)
    create_app(settings.model_copy(update={**PRODUCTION, "public_base_url": "https://gw.example"}))
    create_app(settings.model_copy(update={"public_base_url": "http://gw.example"}))  # sandbox: allowed


async def test_a_nonce_the_service_did_not_issue_is_refused_and_replaced(dash: Dash) -> None:
    person = await dash.person()
    browser = dash.browser(cookies={"agentgate_csrf": "planted-by-someone"})
    fields = {"email": person.email, "password": PASSWORD}
    forged = await browser.post(
        "/app/login", data={"csrf_token": token_for(dash.settings, "planted-by-someone"), **fields}
    )
    assert forged.status_code == 403 and "csrf_token_invalid" in forged.text  # even with its true MAC
    page = await browser.get("/app/login")
    issued = cookie_value(set_cookies(page)["agentgate_csrf"])
    assert issued != "planted-by-someone" and "." in issued  # a new nonce, signed by the service
    browser.cookies.set("agentgate_csrf", issued, domain="127.0.0.1", path="/app")
    signed_in = await browser.post("/app/login", data={"csrf_token": csrf_of(page.text), **fields})
    assert signed_in.status_code == 303


async def test_the_nonce_is_replaced_at_sign_in_and_at_sign_out(dash: Dash) -> None:
    person = await dash.person()
    browser = dash.browser()
    login = await browser.get("/app/login")
    before = cookie_value(set_cookies(login)["agentgate_csrf"])
    answer = await browser.post(
        "/app/login", data={"csrf_token": csrf_of(login.text), "email": person.email, "password": PASSWORD}
    )
    after = cookie_value(set_cookies(answer)["agentgate_csrf"])
    assert answer.status_code == 303 and after != before
    made = await post_form(browser, "/app/keys", "/app/keys", name="k", scopes="chat")  # forms go on working
    assert made.status_code == 200
    out = await post_form(browser, "/app/account", "/app/logout")
    assert cookie_value(set_cookies(out)["agentgate_csrf"]) not in (before, after)


async def test_on_https_the_nonce_is_a_host_prefixed_cookie(settings: Settings) -> None:
    async with dashboard_world(settings, public_base_url="https://gw.example") as dash:
        person = await dash.person()
        transport = httpx.ASGITransport(dash.app, client=("10.0.0.1", 5555))
        async with httpx.AsyncClient(
            transport=transport, base_url="https://gw.example", headers={"Accept": BROWSER_ACCEPT}
        ) as browser:
            login = await browser.get("/app/login")
            nonce = set_cookies(login)["__Host-agentgate_csrf"]
            assert "Secure" in nonce and "Path=/;" in nonce + ";" and "Domain" not in nonce
            assert "agentgate_csrf" not in set_cookies(login)
            fields = {"email": person.email, "password": PASSWORD, "csrf_token": csrf_of(login.text)}
            answer = await browser.post("/app/login", data=fields)
            assert answer.status_code == 303 and "__Host-agentgate_csrf" in set_cookies(answer)
            # A plain-named cookie (what a sibling subdomain could set) is not the nonce here.
            issued = browser.cookies["__Host-agentgate_csrf"]
            browser.cookies.delete("__Host-agentgate_csrf")
            browser.cookies.set("agentgate_csrf", issued, domain="gw.example", path="/app")
            token = token_for(dash.settings, issued, browser.cookies["agentgate_session"])
            refused = await browser.post(
                "/app/keys", data={"csrf_token": token, "name": "k", "scopes": "chat"}
            )
            assert refused.status_code == 403 and "csrf_token_invalid" in refused.text
            browser.cookies.set("__Host-agentgate_csrf", issued, domain="gw.example", path="/")
            made = await browser.post("/app/keys", data={"csrf_token": token, "name": "k", "scopes": "chat"})
            assert made.status_code == 200  # the same nonce under its own name
