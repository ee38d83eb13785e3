"""Journey: the platform administrator lists the tenants, creates one (its first admin gets the
invitation on the real SMTP server), creates another, searches by name, filters by plan, and a name
that is taken is refused on the page; at 375 and 1280 px, axe-clean."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from tests.accounts.smtp import SmtpServer, link_in
from tests.browser.dashboard import go_to, wait_for_mail
from tests.browser.harness import Visitor
from tests.browser.pages import ADMIN_EMAIL, ADMIN_PASSWORD
from tests.browser.widths import check_both_widths

pytestmark = pytest.mark.browser


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The app with a platform admin, bootstrapped at its first start with the Demo tenant."""
    return settings.model_copy(
        update={"admin_email": ADMIN_EMAIL, "admin_password": SecretStr(ADMIN_PASSWORD)}
    )


def create(visitor: Visitor, name: str, plan: str, email: str = "") -> None:
    page = visitor.page
    page.get_by_test_id("tenant-name").fill(name)
    page.get_by_test_id("tenant-new-plan").select_option(label=plan)
    page.get_by_test_id("tenant-admin-email").fill(email)
    page.get_by_test_id("tenant-create").click()


def test_the_platform_admin_lists_searches_and_creates_tenants(visitor: Visitor, smtp: SmtpServer) -> None:
    page = visitor.page
    visitor.open("/app/login")
    page.get_by_test_id("login-email").fill(ADMIN_EMAIL)
    page.get_by_test_id("login-password").fill(ADMIN_PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url("**/app")
    go_to(page, "tenants")
    rows = page.get_by_test_id("tenant-row")
    expect(rows).to_have_count(1)
    expect(rows.locator("th")).to_contain_text("Demo")
    expect(rows.get_by_test_id("tenant-standing")).to_have_text("In trial")
    check_both_widths(visitor, "tenants, the demo only")

    create(visitor, "Lovelace Labs", "Professional", "ada@lovelace.example")
    expect(page.get_by_test_id("tenants-notice")).to_contain_text("Created Lovelace Labs")
    expect(page.get_by_test_id("tenants-notice")).to_contain_text("invitation")
    expect(rows).to_have_count(2)
    invitation = wait_for_mail(smtp, "ada@lovelace.example")
    assert "/app/password/reset" in link_in(invitation, "/app/password/reset")
    create(visitor, "Babbage Engines", "Starter")
    expect(rows).to_have_count(3)

    page.get_by_test_id("tenant-q").fill("LOVELACE")
    page.get_by_test_id("tenant-search-submit").click()
    expect(rows).to_have_count(1)
    expect(rows.locator("th")).to_contain_text("Lovelace Labs")
    expect(rows.locator("td").first).to_have_text("Professional")
    expect(page.get_by_test_id("tenant-q")).to_have_value("LOVELACE")
    page.get_by_test_id("tenant-q").fill("")
    page.get_by_test_id("tenant-plan").select_option(label="Starter")
    page.get_by_test_id("tenant-search-submit").click()
    expect(rows).to_have_count(1)
    expect(rows.locator("th")).to_contain_text("Babbage Engines")
    check_both_widths(visitor, "tenants on the starter plan")

    visitor.announce("/app/tenants", 409)
    create(visitor, "Babbage Engines", "Starter")
    expect(page.get_by_test_id("form-error")).to_contain_text("exists already")
    expect(page.get_by_test_id("tenant-name")).to_have_value("Babbage Engines")
    check_both_widths(visitor, "a taken name refused")
