"""A new user's dead ends, in Chromium at 1280 and 375 px: every error a browser meets is a page with
the site's header and a way back, and a form refused by the server comes back with its message next
to the field and what was typed kept (without JavaScript and with it)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.first_hour import OpenAt, check_both_widths, sign_in_as_admin
from tests.browser.harness import Visitor

pytestmark = pytest.mark.browser
LLM_QUESTION = "Write two lines about a lighthouse keeper"  # neither FAQ nor weather: the model answers


def error_page(visitor: Visitor, status: int, heading: str, name: str) -> None:
    page = visitor.page
    expect(page.get_by_test_id("error-page")).to_have_attribute("data-status", str(status))
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    expect(page.locator("header.site-header").get_by_role("link", name="agentgate")).to_be_visible()
    expect(page.get_by_test_id("error-back")).to_be_visible()
    check_both_widths(visitor, name)


def test_every_error_page_a_browser_meets(open_at: OpenAt) -> None:
    visitor = open_at("localhost")
    page = visitor.page
    for path, status in (("/no-such-page", 404), ("/app/logout", 405), ("/app/register/verify", 400),
                         ("/app/session", 403), ("/app/session", 401), ("/ask", 429), ("/ask", 503)):  # fmt: skip
        visitor.announce(path, status)

    visitor.open("/no-such-page", status=404)
    error_page(visitor, 404, "Page not found", "404")
    page.get_by_test_id("error-back").click()  # no page to go back to: home
    page.wait_for_url(f"{visitor.origin}/")

    visitor.open("/pricing")
    visitor.open("/app/logout", status=405)  # a form's address, opened as a link
    error_page(visitor, 405, "This address does not take that request", "405")
    visitor.open("/app/register/verify?token=" + "x" * 201, status=400)
    error_page(visitor, 400, "This request could not be used", "400")

    # A sign-in form from a tab whose session changed meanwhile (its CSRF token is stale): 403.
    visitor.open("/app/login")
    visitor.context.clear_cookies()
    page.evaluate("""() => { const form = document.getElementById('passkey-session');
                             form.elements.token.value = 'ey.any.token'; form.submit(); }""")
    error_page(visitor, 403, "You may not do this here", "403")
    # The passkey hand-over with a token that is no session: 401.
    visitor.open("/app/login")
    page.evaluate("""() => { const form = document.getElementById('passkey-session');
                             form.elements.token.value = 'ey.not.a-token'; form.submit(); }""")
    error_page(visitor, 401, "Please sign in", "401")

    # The ask form without scripts: the model budget (one call a minute here) runs out, then the
    # limit of asks (four an hour here) is reached.
    visitor.open("/")
    for expected in (200, 503, 503, 503, 429):
        page.get_by_label("Your question").fill(LLM_QUESTION)
        with page.expect_navigation():
            page.evaluate("document.getElementById('ask-form').submit()")
        if expected == 503:
            error_page(visitor, 503, "Not available right now", "503")
            page.get_by_test_id("error-back").click()
            page.wait_for_url(f"{visitor.origin}/")
    error_page(visitor, 429, "Too many requests", "429")
    expect(page.locator("main")).to_contain_text("Please try again in")


def test_a_refused_form_keeps_its_input_and_says_what_to_change(open_at: OpenAt) -> None:
    visitor = open_at("localhost")
    page = visitor.open("/app/register")
    page.get_by_test_id("register-email").fill("ada@analytical")  # a browser takes it; the service does not
    page.get_by_test_id("register-organisation").fill("Analytical Engines")
    page.get_by_test_id("register-password").fill("quiet-meadow-copper-72")
    visitor.announce("/app/register", 400)
    page.get_by_test_id("register-submit").click()
    expect(page.get_by_test_id("field-error-email")).to_have_text(
        "Enter an e-mail address like name@example.com."
    )
    expect(page.get_by_test_id("register-email")).to_have_value("ada@analytical")
    expect(page.get_by_test_id("register-organisation")).to_have_value("Analytical Engines")
    expect(page.get_by_test_id("register-email")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("form-error")).to_be_visible()
    check_both_widths(visitor, "registration refused")

    # With scripts, the newsletter form on the home page shows its refusal in place.
    visitor.open("/")
    form = page.locator("form[data-partial]")
    form.get_by_label("E-mail address").fill("reader@example")
    form.get_by_label("Name").fill("Reader")
    visitor.announce("/newsletter", 400)
    form.get_by_role("button", name="Subscribe").click()
    expect(form.get_by_test_id("field-error-email")).to_be_visible()
    expect(form.get_by_label("Name")).to_have_value("Reader")
    assert page.url == f"{visitor.origin}/"  # still the home page
    check_both_widths(visitor, "newsletter refused in place")


def test_a_signed_in_form_refused_keeps_its_input(open_at: OpenAt) -> None:
    visitor = open_at("localhost")
    sign_in_as_admin(visitor)
    page = visitor.open("/app/playground")
    page.get_by_test_id("playground-message").fill("Keep this message")
    page.get_by_test_id("playground-max-tokens").evaluate("(field) => field.removeAttribute('max')")
    page.get_by_test_id("playground-max-tokens").fill("5000")
    visitor.announce("/app/playground", 400)
    page.get_by_test_id("playground-send").click()
    expect(page.get_by_test_id("field-error-max_tokens")).to_have_text("Enter 4096 or less.")
    expect(page.get_by_test_id("playground-message")).to_have_value("Keep this message")
    check_both_widths(visitor, "playground refused")
