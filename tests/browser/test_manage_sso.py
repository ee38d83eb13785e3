"""Journey: single sign-on set up in the dashboard. A domain claimed, its TXT record copied from the
page and published on a real DNS server on loopback, Verify pressed and the domain shown verified;
a real OpenID provider (oidc-provider on Node) connected with the OIDC form, after the form refused a
provider that names an internal endpoint; the connection disabled and enabled; the enforcement
warning naming who would be locked out. At 375 and 1280 px, axe-core clean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from agent_server.foundation.settings import Settings
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, negotiate, register
from tests.browser.manage import check_both

pytestmark = pytest.mark.browser
DOMAIN = "hopper-sso.example"
EMAIL = f"grace@{DOMAIN}"


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


@pytest.fixture
def settings(settings: Settings, dns: LoopbackDns) -> Settings:
    return settings.model_copy(update={"dns_nameservers": [dns.address]})


def test_a_domain_is_verified_and_an_openid_provider_connected(
    open_visitor: OpenVisitor, smtp: SmtpServer, dns: LoopbackDns, settings: Settings
) -> None:
    visitor = open_visitor(permissions=["clipboard-read", "clipboard-write"])
    page = visitor.page
    register(visitor, smtp, EMAIL, "Hopper Navy Labs", plan="professional")
    negotiate(settings, "Hopper Navy Labs")  # Enterprise: set by the operator with a contract end
    go_to(page, "sso")
    check_both(visitor, "single sign-on, nothing set up")

    page.get_by_test_id("sso-domain").fill(DOMAIN)
    page.get_by_test_id("sso-domain-claim").click()
    expect(page.get_by_test_id("sso-notice")).to_contain_text("publish its DNS record")
    claim = page.get_by_test_id("sso-domain-row")
    expect(claim.get_by_test_id("sso-domain-status")).to_contain_text("Not verified yet")
    name = claim.get_by_test_id("sso-record-name").input_value()
    claim.get_by_test_id("copy-sso-record-value").click()
    expect(page.locator("#copy-status")).to_have_text("Copied to the clipboard.")
    value = page.evaluate("navigator.clipboard.readText()")
    assert name == f"_agentgate-verification.{DOMAIN}" and value.startswith("agentgate-verification=")
    check_both(visitor, "a claimed domain and its DNS record")

    visitor.announce(f"/app/sso/domains/{DOMAIN}/verify", 400)
    claim.get_by_test_id("sso-domain-verify").click()  # before the record is published
    expect(page.get_by_test_id("form-error")).to_contain_text(f"No TXT record {name}")
    dns.publish(name, value)
    page.get_by_test_id("sso-domain-row").get_by_test_id("sso-domain-verify").click()
    expect(page.get_by_test_id("sso-notice")).to_contain_text("The domain is verified")
    expect(page.get_by_test_id("sso-domain-status")).to_contain_text("Verified")
    check_both(visitor, "a verified domain")

    with OidcProvider(
        f"{page.url.split('/app')[0]}/sso/oidc/callback", {}, discovery={"jwks_uri": "http://10.0.0.9/keys"}
    ) as bad:
        visitor.announce("/app/sso/oidc", 400)
        page.get_by_test_id("sso-oidc-issuer").fill(bad.issuer)
        page.get_by_test_id("sso-oidc-client-id").fill(bad.client_id)
        page.get_by_test_id("sso-oidc-client-secret").fill(bad.client_secret)
        page.get_by_test_id("sso-oidc-save").click()
        expect(page.get_by_test_id("form-error")).to_contain_text("10.0.0.9 is a private address")
        expect(page.get_by_test_id("sso-oidc-issuer")).to_have_value(bad.issuer)  # what was typed stays
        check_both(visitor, "an OpenID provider with an internal endpoint, refused")

    with OidcProvider(f"{page.url.split('/app')[0]}/sso/oidc/callback", {}) as provider:
        page.get_by_test_id("sso-oidc-issuer").fill(provider.issuer)
        page.get_by_test_id("sso-oidc-client-id").fill(provider.client_id)
        page.get_by_test_id("sso-oidc-client-secret").fill(provider.client_secret)
        page.get_by_test_id("sso-oidc-save").click()
        expect(page.get_by_test_id("sso-notice")).to_have_text("The OpenID Connect settings are saved.")
    expect(page.get_by_test_id("sso-oidc-state")).to_have_text("enabled")
    expect(page.get_by_test_id("sso-oidc-client-secret")).to_have_value("")  # never shown back
    assert provider.client_secret not in page.content()
    check_both(visitor, "an OpenID provider connected")
    page.get_by_test_id("sso-oidc-disable").click()
    expect(page.get_by_test_id("sso-oidc-state")).to_have_text("disabled")
    page.get_by_test_id("sso-oidc-enable").click()
    expect(page.get_by_test_id("sso-oidc-state")).to_have_text("enabled")

    page.get_by_test_id("sso-enforcement-on").click()
    warning = page.get_by_test_id("sso-enforcement-warning")
    expect(warning).to_contain_text("1 member is signed out at once, you included")
    expect(warning).to_contain_text("Every member's address is in a verified domain")
    check_both(visitor, "the enforcement warning")
