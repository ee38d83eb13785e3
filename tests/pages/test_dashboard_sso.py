"""Single sign-on started on the dashboard's sign-in page finishes in a dashboard session, against a
real SAML identity provider (pysaml2) and a real OpenID provider (Node), both on loopback; a replayed
hand-off in another browser signs nobody in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL, set_up_sso, sso_app
from tests.accounts.saml_idp import SamlIdp, SamlWorld, read_form, saml_world
from tests.conftest import BASE_URL
from tests.pages.dashboard import csrf_of

DOMAIN = "dash-sso.test"


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    with SamlIdp(tmp_path_factory.mktemp("idp")).running() as server:
        yield server


@pytest.fixture
async def world(settings: Settings, clock: ManualClock, idp: SamlIdp) -> AsyncIterator[SamlWorld]:
    async with saml_world(settings, clock, idp) as w:
        yield w


async def start_on_the_sign_in_page(client: httpx.AsyncClient, email: str) -> httpx.Response:
    login = await client.get("/app/login")
    return await client.post("/app/login/sso", data={"csrf_token": csrf_of(login.text), "email": email})


async def test_saml_sign_in_from_the_dashboard_ends_in_a_session(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    browser = world.client
    started = await start_on_the_sign_in_page(browser, "alice@acme.example")
    assert started.status_code == 303
    location = started.headers["location"]
    assert location.startswith(f"{BASE_URL}/sso/saml/{org.id}/start?relay_state=app%3A")
    assert "agentgate_sso_dashboard=" in started.headers["set-cookie"]
    to_idp = await browser.get(location)
    async with httpx.AsyncClient() as outside:
        action, fields = read_form((await outside.get(to_idp.headers["location"])).text)
    assert fields["RelayState"].startswith("app:")

    handed = await browser.post(action, data=fields)
    assert handed.status_code == 303 and handed.headers["cache-control"] == "no-store"
    assert handed.headers["location"].startswith("/app/login/sso/finish?ticket=")
    assert "access_token" not in handed.text

    thief = httpx.AsyncClient(transport=httpx.ASGITransport(world.app), base_url=BASE_URL)
    async with thief:  # the hand-off URL in another browser: no binding cookie
        stolen = await thief.get(handed.headers["location"], headers={"Accept": "text/html"})
        assert stolen.status_code == 400 and "sso_state_invalid" in stolen.text
    # The ticket was taken by that attempt: a ticket works once, whoever presents it.
    assert (await browser.get(handed.headers["location"])).status_code == 400


async def test_the_right_browser_gets_the_session(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    browser = world.client
    started = await start_on_the_sign_in_page(browser, "bob@acme.example")
    to_idp = await browser.get(started.headers["location"])
    async with httpx.AsyncClient() as outside:
        action, fields = read_form((await outside.get(to_idp.headers["location"])).text)
    handed = await browser.post(action, data=fields)
    finished = await browser.get(handed.headers["location"])
    assert finished.status_code == 303 and finished.headers["location"] == "/app"
    assert "agentgate_session=ey" in finished.headers["set-cookie"]
    assert 'agentgate_sso_dashboard=""' in finished.headers["set-cookie"]  # the binding is spent
    home = await browser.get("/app")
    assert home.status_code == 200 and "<h1>org-" in home.text
    sso_page = await browser.get("/app/sso")
    assert sso_page.status_code == 200 and "SAML 2.0" in sso_page.text and "acme.example" in sso_page.text


async def test_an_address_without_sso_stays_on_the_sign_in_page(world: SamlWorld) -> None:
    answer = await start_on_the_sign_in_page(world.client, "nobody@nowhere.example")
    assert answer.status_code == 404 and 'data-test="form-error"' in answer.text


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    users = {"alice": {"email": f"alice@{DOMAIN}", "email_verified": True, "name": "Alice"}}
    with OidcProvider(CALLBACK_URL, users) as running_provider:
        yield running_provider


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


async def test_openid_connect_sign_in_from_the_dashboard_ends_in_a_session(
    tmp_path: Path, dns: LoopbackDns, provider: OidcProvider
) -> None:
    async with sso_app(tmp_path, dns) as h:
        admin = await h.tenant("enterprise")
        await set_up_sso(h, admin, provider, dns, DOMAIN)
        started = await start_on_the_sign_in_page(h.client, f"alice@{DOMAIN}")
        assert started.status_code == 303 and "?dashboard=app%3A" in started.headers["location"]
        to_provider = await h.client.get(started.headers["location"])
        assert (
            to_provider.status_code == 302
            and "agentgate_sso_oidc_dashboard=app" in to_provider.headers["set-cookie"]
        )
        callback = await provider.sign_in(to_provider.headers["location"], "alice")
        assert parse_qs(urlsplit(callback).query)["state"]
        handed = await h.client.get(callback[len(BASE_URL) :])
        assert handed.status_code == 303 and handed.headers["location"].startswith("/app/login/sso/finish?")
        finished = await h.client.get(handed.headers["location"])
        assert finished.status_code == 303 and "agentgate_session=ey" in finished.headers["set-cookie"]
        assert (await h.client.get("/app/keys")).status_code == 200

        plain = await h.client.get(f"/sso/oidc/{admin.id}/start")  # the API's own flow: JSON as before
        assert 'agentgate_sso_oidc_dashboard=""' in plain.headers["set-cookie"]
        answer = await h.client.get(
            (await provider.sign_in(plain.headers["location"], "alice"))[len(BASE_URL) :]
        )
        assert answer.status_code == 200 and answer.json()["token_type"] == "bearer"
