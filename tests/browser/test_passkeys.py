"""Journey 3: passkeys made and used in Chromium with its virtual authenticator (DevTools protocol):
registering with a passkey, adding one to a password account, and signing in with it.

WebAuthn needs a secure context and a relying-party id that is a domain, so the app is served as
``http://localhost:<port>`` with ``AGENTGATE_WEBAUTHN_RP_ID=localhost`` (tests/browser/live.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import CDPSession, Page, expect

from tests.accounts.smtp import SmtpServer
from tests.browser.dashboard import go_to, register
from tests.browser.harness import Visitor

pytestmark = pytest.mark.browser


def virtual_authenticator(visitor: Visitor) -> tuple[CDPSession, str]:
    """A platform authenticator with resident keys and user verification that always says yes."""
    cdp = visitor.context.new_cdp_session(visitor.page)
    cdp.send("WebAuthn.enable")
    options = {
        "protocol": "ctap2",
        "transport": "internal",
        "hasResidentKey": True,
        "hasUserVerification": True,
        "isUserVerified": True,
        "automaticPresenceSimulation": True,
    }
    answer = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
    return cdp, answer["authenticatorId"]


def credentials(cdp: CDPSession, authenticator: str) -> list[dict[str, Any]]:
    return cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]


def sign_out_and_back_in_with_the_passkey(visitor: Visitor, organisation: str) -> None:
    page: Page = visitor.page
    page.get_by_test_id("sign-out").click()
    expect(page.get_by_test_id("signed-out")).to_be_visible()
    visitor.open("/app/keys")  # signed out: the page asks to sign in first
    assert "/app/login" in page.url
    page.get_by_test_id("passkey-login").click()
    page.wait_for_url("**/app/keys")
    expect(page.get_by_test_id("nav-keys")).to_have_attribute("aria-current", "page")
    go_to(visitor, "app")
    expect(page.get_by_role("heading", level=1)).to_have_text(organisation)
    visitor.check("signed in with the passkey")


def test_register_with_a_passkey_then_sign_in_with_it(visitor: Visitor, smtp: SmtpServer) -> None:
    cdp, authenticator = virtual_authenticator(visitor)
    register(visitor, smtp, "grace@compilers.example", "Compilers", passkey=True)

    made = credentials(cdp, authenticator)
    assert len(made) == 1 and made[0]["isResidentCredential"] and made[0]["rpId"] == "localhost"
    go_to(visitor, "passkeys")
    expect(visitor.page.get_by_test_id("passkey-row")).to_have_count(1)
    visitor.check("passkeys after registering with one")

    sign_out_and_back_in_with_the_passkey(visitor, "Compilers")
    assert credentials(cdp, authenticator)[0]["signCount"] > made[0]["signCount"]


def test_add_a_passkey_to_a_password_account_and_sign_in_with_it(visitor: Visitor, smtp: SmtpServer) -> None:
    cdp, authenticator = virtual_authenticator(visitor)
    register(visitor, smtp, "alan@machines.example", "Universal Machines")
    page = visitor.page
    go_to(visitor, "passkeys")
    expect(page.get_by_test_id("passkeys-empty")).to_be_visible()
    visitor.check("passkeys, none yet")
    page.get_by_test_id("passkey-name").fill("This laptop")
    page.get_by_test_id("passkey-add").click()
    row = page.get_by_test_id("passkey-row")
    expect(row).to_have_count(1)
    expect(row.locator("th")).to_have_text("This laptop")
    assert len(credentials(cdp, authenticator)) == 1
    visitor.check("passkeys with the new one")

    sign_out_and_back_in_with_the_passkey(visitor, "Universal Machines")
