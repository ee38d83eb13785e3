"""What a new user does in the dashboard before the journeys differ: register, read the mail on the
real SMTP server, follow the link and confirm. The pages' ``data-test`` hooks are in docs/pages.md."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from playwright.sync_api import Page, expect

from agent_server.foundation.settings import Settings
from tests.accounts.conftest import PASSWORD
from tests.accounts.smtp import SmtpServer, link_in
from tests.browser.harness import Visitor


def negotiate(settings: Settings, organisation: str, plan: str = "enterprise") -> None:
    """A negotiated plan is not self-served (docs/billing.md, "Plans"): the operator sets it with the
    contract's end, here a year ahead, with the command line on the server's database."""
    end = (datetime.now(UTC) + timedelta(days=365)).date().isoformat()
    argv = ["tenants", "set-plan", "--tenant", organisation, "--plan", plan, "--contract-end", end]
    env = {**os.environ, "AGENTGATE_DATA_DIR": str(settings.data_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "http_facade.cli", *argv], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def wait_for_mail(smtp: SmtpServer, to: str, timeout: float = 15.0) -> EmailMessage:
    """The first message the SMTP server received for ``to``, waiting up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for message in list(smtp.messages):
            if any(a.addr_spec.lower() == to.lower() for a in message["To"].addresses):
                return message
        time.sleep(0.05)
    raise AssertionError(f"no mail for {to} within {timeout} s")


def register(
    visitor: Visitor,
    smtp: SmtpServer,
    email: str,
    organisation: str,
    *,
    plan: str = "starter",
    passkey: bool = False,
) -> None:
    """Registers with a password (or a passkey the context's authenticator makes), follows the link in
    the mail and confirms: the visitor ends on the overview, signed in."""
    page = visitor.open("/app/register")
    visitor.check("registration form")
    page.get_by_test_id("register-email").fill(email)
    page.get_by_test_id("register-organisation").fill(organisation)
    page.get_by_test_id("register-plan").select_option(plan)
    if passkey:
        page.get_by_test_id("register-method-passkey").check()
        expect(page.get_by_test_id("register-password")).to_be_hidden()
    else:
        page.get_by_test_id("register-password").fill(PASSWORD)
    page.get_by_test_id("register-submit").click()
    expect(page.get_by_test_id("register-sent")).to_be_visible()
    visitor.check("registration sent")

    link = link_in(wait_for_mail(smtp, email), "/app/register/verify")
    visitor.open(link)
    visitor.check("confirm the registration")
    page.get_by_test_id("verify-submit").click()
    expect(page.get_by_test_id("welcome")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_have_text(organisation)
    visitor.check("overview after confirming")


def go_to(where: Visitor | Page, entry: str) -> None:
    """Follows the dashboard's navigation entry ``nav-<entry>``, opening the menu first where the
    navigation is one (narrow screens), as a person does."""
    page = where.page if isinstance(where, Visitor) else where
    open_menu(page)
    page.get_by_test_id(f"nav-{entry}").click()


def open_menu(page: Page) -> None:
    """Opens the dashboard's navigation where it is a menu (narrow screens); wide, it is always shown."""
    menu = page.locator("details.dash-menu")
    if page.get_by_test_id("dash-menu").is_visible() and menu.get_attribute("open") is None:
        page.get_by_test_id("dash-menu").click()
