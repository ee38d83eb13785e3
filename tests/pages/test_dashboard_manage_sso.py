"""Single sign-on managed in the dashboard, against a real DNS server and a real OpenID provider on
loopback: a domain claimed, its record published and verified, the provider connected (an internal
endpoint refused, the secret never shown back and kept on a later save), disabled and enabled,
enforcement confirmed with who is locked out, then switched on (the admin's session ends); the plan
gate on a plan without single sign-on."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import select

from agent_server.accounts.tables import SsoConnection
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL
from tests.accounts.saml_idp import SamlIdp
from tests.gateway.conftest import PASSWORD, password_hash
from tests.pages.dashboard import Dash, dashboard_world, post_form
from tests.pages.manage import assert_page, disabled_fieldset, error_message, field, notice

DOMAIN = "manage-sso.test"


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CALLBACK_URL, {"ann": {"email": f"ann@{DOMAIN}", "email_verified": True}}) as running:
        yield running


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


@pytest.fixture
async def dash(settings: Settings, dns: LoopbackDns) -> AsyncIterator[Dash]:
    async with dashboard_world(settings, dns_nameservers=[dns.address]) as world:
        yield world


async def test_sso_is_set_up_and_enforced_from_the_dashboard(
    dash: Dash, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await dash.person(plan="enterprise")
    browser = await dash.signed_in(admin)
    claimed = await post_form(browser, "/app/sso", "/app/sso/domains", domain=f" {DOMAIN.upper()} ")
    assert claimed.status_code == 303
    shown = assert_page(await browser.get(claimed.headers["location"]))
    assert "publish its DNS record" in notice(shown)
    name, value = field(shown, "sso-record-name"), field(shown, "sso-record-value")
    assert name == f"_agentgate-verification.{DOMAIN}" and value.startswith("agentgate-verification=")

    missing = await post_form(browser, "/app/sso", f"/app/sso/domains/{DOMAIN}/verify")
    assert f"No TXT record {name}" in error_message(assert_page(missing, 400))
    dns.publish(name, value)
    verified = await post_form(browser, "/app/sso", f"/app/sso/domains/{DOMAIN}/verify")
    shown = assert_page(await browser.get(verified.headers["location"]))
    assert "The domain is verified" in notice(shown) and "<strong>Verified</strong>" in shown

    base = {"issuer": provider.issuer, "client_id": provider.client_id, "scopes": "openid email"}
    no_secret = await post_form(browser, "/app/sso", "/app/sso/oidc", **base)
    assert "client secret" in error_message(assert_page(no_secret, 400))
    assert field(no_secret.text, "sso-oidc-issuer") == provider.issuer  # what was typed stays
    saved = await post_form(
        browser, "/app/sso", "/app/sso/oidc", **base, client_secret=provider.client_secret
    )
    shown = assert_page(await browser.get(saved.headers["location"]))
    assert notice(shown) == "The OpenID Connect settings are saved."
    assert provider.client_secret not in shown and field(shown, "sso-oidc-scopes") == "openid email"
    assert field(shown, "sso-oidc-redirect") == CALLBACK_URL
    # Saved again without the secret (same provider and client): the stored one is kept.
    again = await post_form(
        browser, "/app/sso", "/app/sso/oidc", **{**base, "scopes": "openid email profile"}
    )
    assert again.status_code == 303
    async with dash.app.state.services.db.session() as session:
        row = (await session.execute(select(SsoConnection))).scalars().one()
    assert dash.app.state.accounts.box.decrypt(row.secret) == provider.client_secret

    off = await post_form(browser, "/app/sso", "/app/sso/connections/oidc", enabled="false")
    assert 'data-test="sso-oidc-state">disabled' in assert_page(await browser.get(off.headers["location"]))
    await post_form(browser, "/app/sso", "/app/sso/connections/oidc", enabled="true")

    # Members whose address is in no verified domain (the admin's own is admin@org-….example): the
    # confirmation names them as locked out.
    db, now = dash.app.state.services.db, dash.clock.now()
    outsider = repo.new_user(now, admin.tenant_id, "bob@elsewhere.test", await password_hash(), [])
    await repo.add_user(db, outsider)
    confirm = assert_page(await browser.get("/app/sso/enforcement"))
    warning = re.search(r'data-test="sso-enforcement-warning">([\s\S]*?)</div>', confirm).group(1)  # type: ignore[union-attr]
    assert "2 members are signed out at once, you included" in warning
    assert "2 members have no way back in" in warning
    assert "bob@elsewhere.test" in warning and admin.email in warning
    enforced = await post_form(browser, "/app/sso/enforcement", "/app/sso/enforcement", enforced="true")
    assert enforced.status_code == 303
    after = await browser.get(enforced.headers["location"])
    assert after.status_code == 303 and after.headers["location"].startswith("/app/login?next=%2Fapp%2Fsso")
    login = await dash.browser().post(
        "/admin/auth/login", json={"email": outsider.email, "password": PASSWORD}, headers={"Accept": "*/*"}
    )
    assert login.status_code == 403 and login.json()["error"]["code"] == "sso_required"


async def test_an_oidc_endpoint_on_an_internal_address_is_refused_on_the_page(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="enterprise"))
    with OidcProvider(CALLBACK_URL, {}, discovery={"token_endpoint": "http://10.0.0.7/token"}) as misleading:
        refused = await post_form(browser, "/app/sso", "/app/sso/oidc", issuer=misleading.issuer,
                                  client_id=misleading.client_id, client_secret=misleading.client_secret)  # fmt: skip
    text = assert_page(refused, 400)
    assert "token endpoint URL is refused: 10.0.0.7 is a private address" in error_message(text)
    assert 'href="/docs/errors#sso_url_refused"' in text and 'data-test="sso-oidc-facts"' not in text


async def test_a_plan_without_sso_shows_the_forms_disabled_and_keeps_domains_open(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="professional"))
    shown = assert_page(await browser.get("/app/sso"))
    gate = re.search(r'data-test="plan-gate-sso">([\s\S]*?)</div>', shown).group(1)  # type: ignore[union-attr]
    assert (
        "The Professional plan does not include single sign-on." in gate
        and "The Enterprise plan does" in gate
    )
    assert disabled_fieldset(shown, "/app/sso/oidc") and disabled_fieldset(shown, "/app/sso/saml")
    assert 'data-test="sso-enforcement-on"' not in shown
    claimed = await post_form(browser, "/app/sso", "/app/sso/domains", domain="later-sso.test")
    assert claimed.status_code == 303  # domains prepare an upgrade, as in the JSON API
    crafted = await post_form(browser, "/app/sso", "/app/sso/oidc", issuer="https://idp.example",
                              client_id="c", client_secret="s")  # fmt: skip
    assert "plan" in error_message(assert_page(crafted, 403))


async def test_deleting_a_claim_or_a_connection_asks_first(dash: Dash, provider: OidcProvider) -> None:
    browser = await dash.signed_in(await dash.person(plan="enterprise"))
    await post_form(browser, "/app/sso", "/app/sso/domains", domain="gone-sso.test")
    confirm = assert_page(await browser.get("/app/sso/domains/gone-sso.test/delete"))
    assert 'data-test="sso-domain-delete-confirm"' in confirm
    deleted = await post_form(
        browser, "/app/sso/domains/gone-sso.test/delete", "/app/sso/domains/gone-sso.test/delete"
    )
    assert 'data-test="sso-no-domains"' in assert_page(await browser.get(deleted.headers["location"]))
    assert (await browser.get("/app/sso/oidc/delete")).status_code == 404
    await post_form(browser, "/app/sso", "/app/sso/oidc", issuer=provider.issuer, client_id=provider.client_id,
                    client_secret=provider.client_secret)  # fmt: skip
    assert 'data-test="sso-delete-confirm"' in assert_page(await browser.get("/app/sso/oidc/delete"))
    gone = await post_form(browser, "/app/sso/oidc/delete", "/app/sso/oidc/delete")
    assert "is deleted" in notice(assert_page(await browser.get(gone.headers["location"])))
    stranger = await dash.signed_in(await dash.person(plan="enterprise"))
    assert (await stranger.get("/app/sso/domains/gone-sso.test/delete")).status_code == 404


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    with SamlIdp(tmp_path_factory.mktemp("idp")).running() as server:
        yield server


async def test_a_saml_provider_is_connected_from_its_metadata_url_or_xml(dash: Dash, idp: SamlIdp) -> None:
    browser = await dash.signed_in(await dash.person(plan="enterprise"))
    shown = assert_page(await browser.get("/app/sso"))
    assert field(shown, "sso-saml-acs").endswith("/acs") and field(shown, "sso-saml-metadata").endswith(
        "/metadata"
    )

    both = await post_form(browser, "/app/sso", "/app/sso/saml", idp_metadata_url=f"{idp.url}/metadata",
                           idp_metadata_xml=idp.metadata_xml)  # fmt: skip
    assert "idp_metadata_url" in error_message(assert_page(both, 400))
    broken = await post_form(browser, "/app/sso", "/app/sso/saml", idp_metadata_xml="<EntityDescriptor/>")
    assert "saml_metadata" in assert_page(broken, 400) and "&lt;EntityDescriptor/&gt;" in broken.text
    saved = await post_form(browser, "/app/sso", "/app/sso/saml", idp_metadata_url=f"{idp.url}/metadata")
    assert saved.status_code == 303, saved.text[:500]
    shown = assert_page(await browser.get(saved.headers["location"]))
    assert notice(shown) == "The SAML settings are saved." and idp.entity_id in shown
    assert 'data-test="sso-saml-state">enabled' in shown

    off = await post_form(browser, "/app/sso", "/app/sso/connections/saml", enabled="false")
    assert 'data-test="sso-saml-state">disabled' in assert_page(await browser.get(off.headers["location"]))
    # Saving the metadata again keeps the connection's state (the form does not show it).
    await post_form(browser, "/app/sso", "/app/sso/saml", idp_metadata_xml=idp.metadata_xml)
    assert 'data-test="sso-saml-state">disabled' in (await browser.get("/app/sso")).text
    gone = await post_form(browser, "/app/sso/saml/delete", "/app/sso/saml/delete")
    assert "The SAML connection is deleted." in notice(
        assert_page(await browser.get(gone.headers["location"]))
    )
