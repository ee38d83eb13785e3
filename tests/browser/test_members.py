"""Journey: two people. The owner invites a colleague as developer; the mail reaches the SMTP server;
the colleague accepts, chooses a password and sees a developer's pages only; the owner makes them a
viewer, who cannot create a key; the owner removes them, and their session ends at once. At 1280 and
375 px, every page checked with axe-core."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.accounts.members import MEMBER_PASSWORD
from tests.accounts.smtp import SmtpServer, link_in
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, open_menu, register, wait_for_mail

pytestmark = pytest.mark.browser
COLLEAGUE = "grace@analytical.example"


@pytest.mark.parametrize("width", [1280, 375])
def test_invite_accept_change_the_role_and_remove_a_member(
    open_visitor: OpenVisitor, smtp: SmtpServer, width: int
) -> None:
    owner, colleague = open_visitor(), open_visitor()
    for person in (owner, colleague):
        person.page.set_viewport_size({"width": width, "height": 900 if width > 800 else 812})
    boss = owner.page
    register(owner, smtp, "ada@analytical.example", "Analytical Engines")

    go_to(boss, "members")
    expect(boss.get_by_test_id("member-row")).to_have_count(1)
    owner.check("members: the owner alone")
    boss.get_by_test_id("invite-email").fill(COLLEAGUE)
    boss.get_by_test_id("invite-role").select_option("developer")
    boss.get_by_test_id("invite-submit").click()
    expect(boss.get_by_test_id("members-notice")).to_be_visible()
    expect(boss.get_by_test_id("invitation-row").get_by_test_id("invitation-state")).to_have_text("pending")
    owner.check("members: the invitation is pending")

    link = link_in(wait_for_mail(smtp, COLLEAGUE), "/app/invitations/accept")
    page = colleague.page
    colleague.open(link)
    expect(page.get_by_test_id("invite-facts")).to_contain_text("developer")
    colleague.check("the invitation's page")
    page.get_by_test_id("invite-password").fill(MEMBER_PASSWORD)
    page.get_by_test_id("invite-accept-new").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Analytical Engines")
    open_menu(page)  # at 375 px the navigation is a menu
    for allowed in ("nav-keys", "nav-usage", "nav-playground", "nav-account"):
        expect(page.get_by_test_id(allowed)).to_be_visible()
    for hidden in ("nav-members", "nav-billing", "nav-sso"):
        expect(page.get_by_test_id(hidden)).to_have_count(0)
    colleague.check("a developer's overview")
    colleague.announce("/app/members", 403)
    colleague.open("/app/members", status=403)
    expect(page.get_by_text("role_not_allowed")).to_be_visible()
    colleague.check("a developer may not open the members page")

    boss.reload()
    row = boss.locator(f'[data-test="member-row"][data-member-email="{COLLEAGUE}"]')
    expect(row.get_by_test_id("member-role")).to_have_text("developer")
    row.get_by_test_id("member-role-select").select_option("viewer")
    row.get_by_test_id("member-role-save").click()
    expect(boss.get_by_test_id("members-notice")).to_be_visible()
    expect(row.get_by_test_id("member-role")).to_have_text("viewer")
    owner.check("members: the colleague is a viewer")

    colleague.open("/app/keys")  # from the refusal page, which has no navigation
    expect(page.get_by_test_id("keys-empty")).to_be_visible()
    # a viewer reads the keys; the form is shown disabled, saying who may create one
    expect(page.get_by_test_id("keys-read-only")).to_contain_text("Your role (viewer)")
    expect(page.get_by_test_id("key-name")).to_be_disabled()
    expect(page.get_by_test_id("key-create")).to_be_disabled()
    colleague.check("a viewer cannot create a key")

    row.get_by_test_id("member-remove").click()
    expect(boss.get_by_test_id("members-notice")).to_be_visible()
    expect(boss.get_by_test_id("member-row")).to_have_count(1)
    owner.check("members: the colleague is removed")

    page.reload()
    expect(page.get_by_test_id("login-form")).to_be_visible()  # the session ended at once
    colleague.check("the removed colleague is signed out")
