"""Journeys of a new user's first hour on the quickstart server (as ``make run`` serves it), in
Chromium at 1280 and 375 px: passkeys at ``localhost`` without any passkey setting, the header and
navigation, the discovery call booked on the site, the newsletter's confirmation by mail, and the
playground's trace read alike live and as a page."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from agent_server.foundation.settings import Settings
from tests.accounts.smtp import SmtpServer, link_in
from tests.browser.dashboard import go_to, register, wait_for_mail
from tests.browser.first_hour import OpenAt, check_both_widths, mails_to, sign_in_as_admin
from tests.browser.live import ThreadedServer
from tests.browser.pages import ADMIN_EMAIL
from tests.browser.test_passkeys import (
    credentials,
    sign_out_and_back_in_with_the_passkey,
    virtual_authenticator,
)

pytestmark = pytest.mark.browser


def test_a_passkey_registered_and_used_on_localhost_with_no_passkey_setting(
    open_at: OpenAt, smtp: SmtpServer, quickstart: ThreadedServer, settings: Settings
) -> None:
    at_ip = open_at("127.0.0.1")  # the address the server is bound to
    page = at_ip.open("/app/login")
    expect(page.get_by_test_id("passkey-login")).to_have_count(0)  # a browser refuses passkeys here
    pointer = page.get_by_test_id("passkey-elsewhere").get_by_role("link")
    expect(pointer).to_have_attribute("href", f"http://localhost:{quickstart.port}/app/login")
    check_both_widths(at_ip, "sign-in at the IP address")

    visitor = open_at("localhost")
    cdp, authenticator = virtual_authenticator(visitor)
    # A passkey the browser fails to make (the device does not verify the person) shows the error
    # and sends no mail.
    cdp.send("WebAuthn.setUserVerified", {"authenticatorId": authenticator, "isUserVerified": False})
    page = visitor.open("/app/register")
    page.get_by_test_id("register-email").fill("grace@compilers.example")
    page.get_by_test_id("register-organisation").fill("Compilers")
    page.get_by_test_id("register-method-passkey").check()
    page.get_by_test_id("register-submit").click()
    expect(page.locator("#register-result")).not_to_be_empty()
    expect(page.get_by_test_id("register-sent")).to_have_count(0)
    expect(page.locator("#register-result")).to_contain_text("The passkey prompt was closed")
    assert mails_to(settings.data_dir, "grace@compilers.example") == 0
    cdp.send("WebAuthn.clearCredentials", {"authenticatorId": authenticator})  # what the failure left
    cdp.send("WebAuthn.setUserVerified", {"authenticatorId": authenticator, "isUserVerified": True})

    register(visitor, smtp, "grace@compilers.example", "Compilers", passkey=True)
    made = credentials(cdp, authenticator)
    assert len(made) == 1 and made[0]["rpId"] == "localhost"
    assert mails_to(settings.data_dir, "grace@compilers.example") == 1
    sign_out_and_back_in_with_the_passkey(visitor, "Compilers")
    assert credentials(cdp, authenticator)[0]["signCount"] > made[0]["signCount"]


def test_the_header_names_the_person_and_the_navigation_fits_both_widths(open_at: OpenAt) -> None:
    visitor = open_at("localhost")
    sign_in_as_admin(visitor)
    page = visitor.open("/app/keys")
    header = page.locator("header.site-header")
    expect(header.get_by_test_id("who-email")).to_have_text(ADMIN_EMAIL)
    expect(header.get_by_test_id("who-organisation")).to_have_text("Demo")

    page.set_viewport_size({"width": 1280, "height": 900})
    header_box, sign_out = header.bounding_box(), header.get_by_test_id("sign-out").bounding_box()
    assert header_box and sign_out and header_box["height"] < 80, header_box  # one row, Sign out on it
    for entry in ("app", "keys", "playground", "usage", "audit", "passkeys", "routing", "leads"):
        expect(page.get_by_test_id(f"nav-{entry}")).to_be_visible()  # a sidebar, no menu to open
    expect(page.get_by_test_id("dash-menu")).to_be_hidden()
    check_both_widths(visitor, "keys")

    # 375 px: the header stays small, the navigations are menus, tables keep their actions in view.
    header_box = header.bounding_box()
    assert header_box and header_box["height"] < 130, header_box
    expect(page.get_by_test_id("nav-usage")).to_be_hidden()
    rotate = page.get_by_test_id("key-rotate").first
    box = rotate.bounding_box()
    assert box and box["x"] + box["width"] <= 375, box
    go_to(visitor, "usage")
    expect(page.get_by_role("heading", level=1)).to_have_text("Usage")
    page.get_by_test_id("site-menu").click()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Pricing")).to_be_visible()
    visitor.check("the site's menu open")


def test_the_discovery_call_is_booked_on_the_site(open_at: OpenAt, smtp: SmtpServer) -> None:
    visitor = open_at("localhost")
    page = visitor.open("/")
    page.get_by_role("link", name="Book a free discovery call").click()
    page.wait_for_url("**/catalogue/discovery-call")
    check_both_widths(visitor, "discovery call")
    page.get_by_test_id("call-name").fill("Ada Lovelace")
    page.get_by_test_id("call-email").fill("ada@analytical.example")
    page.get_by_test_id("call-topic").select_option("Training options for your team")
    page.get_by_label("German").check()
    page.get_by_test_id("call-message").fill("Twelve engineers, two weeks in spring.")
    page.get_by_test_id("call-submit").click()
    expect(page.get_by_test_id("call-sent")).to_contain_text("ada@analytical.example")
    check_both_widths(visitor, "discovery call requested")
    confirmation = wait_for_mail(smtp, "ada@analytical.example")
    assert "Training options for your team" in confirmation.get_content()
    notice = wait_for_mail(smtp, "team@agentgate.example")
    assert "Twelve engineers" in notice.get_content() and "Language: de" in notice.get_content()

    admin = open_at("localhost")
    sign_in_as_admin(admin)
    go_to(admin, "leads")
    expect(admin.page.get_by_test_id("lead-row")).to_have_count(1)
    expect(admin.page.get_by_test_id("lead-row")).to_contain_text("Twelve engineers")
    check_both_widths(admin, "discovery call requests")


def test_the_newsletter_confirms_by_mail_before_subscribing(open_at: OpenAt, smtp: SmtpServer) -> None:
    visitor = open_at("localhost")
    page = visitor.open("/newsletter")
    page.locator("main").get_by_label("E-mail address").fill("reader@example.com")
    page.locator("main").get_by_role("button", name="Subscribe").click()
    expect(page.locator("#newsletter-result")).to_contain_text("Check your mail")
    link = urlsplit(link_in(wait_for_mail(smtp, "reader@example.com"), "/newsletter/confirm"))
    page = visitor.open(f"{link.path}?{link.query}")
    check_both_widths(visitor, "confirm the subscription")
    page.get_by_test_id("subscription-confirm").click()
    expect(page.get_by_test_id("newsletter-result")).to_contain_text("You are subscribed.")
    visitor.check("subscribed")


def test_the_trace_reads_alike_live_and_as_a_page(open_at: OpenAt) -> None:
    visitor = open_at("localhost")
    sign_in_as_admin(visitor)
    page = visitor.open("/app/playground")
    models = page.get_by_test_id("playground-model").locator("option").all_inner_texts()
    assert models and not any("embedding" in model for model in models)  # it chats: chat models only
    page.get_by_test_id("playground-message").fill("Hello from the first hour")
    page.get_by_test_id("playground-send").click()
    expect(page.locator("#trace-status")).to_contain_text("attempt")  # the stream has ended
    live = page.get_by_test_id("trace-steps").locator(".step-text").all_inner_texts()
    page.get_by_test_id("trace-link").click()
    shown = page.get_by_test_id("trace-steps-table").locator("td.step-text").all_inner_texts()
    assert live == shown and len(shown) >= 4, (live, shown)
    assert not any(mark in "".join(shown) for mark in '{}[]"')
    check_both_widths(visitor, "trace")
