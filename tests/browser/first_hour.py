"""What the first-hour journeys share: the app configured as ``make run`` leaves it (bound to 127.0.0.1,
public base URL ``http://localhost:<port>``, no relying party configured) with its platform admin, a
visitor on it at ``localhost`` or at the IP address, and checks at both widths a person uses (1280
and 375 px)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.accounts.smtp import SmtpServer
from tests.browser.harness import OVERFLOW, Visitor, assert_accessible
from tests.browser.live import ThreadedServer
from tests.browser.pages import ADMIN_EMAIL, ADMIN_PASSWORD
from tests.conftest import free_port

WIDE, NARROW = (1280, 900), (375, 812)
OpenAt = Callable[[str], Visitor]


@pytest.fixture
def quickstart(settings: Settings, smtp: SmtpServer) -> Iterator[ThreadedServer]:
    """The service as ``make run`` serves it: bound to 127.0.0.1, named ``http://localhost:<port>``
    (``server.url``) in its documents and mail, which goes to the test's SMTP server."""
    port = free_port()
    changes = {
        "public_base_url": f"http://localhost:{port}",
        "smtp_url": SecretStr(smtp.url),
        "admin_email": ADMIN_EMAIL,
        "admin_password": SecretStr(ADMIN_PASSWORD),
        "leads_email": "team@agentgate.example",
        "site_ask_limit": 4,
        "site_llm_requests_per_minute": 1,
    }
    with ThreadedServer(create_app(settings.model_copy(update=changes)), port) as live:
        yield live


@pytest.fixture
def open_at(browser: Browser, quickstart: ThreadedServer, artifacts: Path) -> Iterator[OpenAt]:
    """``open_at("localhost")`` or ``open_at("127.0.0.1")``: a person's browser on the quickstart server
    at that host; every one is closed after the test and must have loaded cleanly."""
    visitors: list[Visitor] = []

    def open_one(host: str) -> Visitor:
        folder = artifacts / f"{len(visitors) + 1}-{host}"
        folder.mkdir()
        visitor = Visitor(browser, f"http://{host}:{quickstart.port}", folder)
        visitors.append(visitor)
        return visitor

    yield open_one
    for visitor in visitors:
        visitor.close()
    for visitor in visitors:
        visitor.assert_clean()


def check_both_widths(visitor: Visitor, name: str) -> None:
    """axe-core and no sideways scrolling at 1280 px, then at 375 px (where the page is left)."""
    page = visitor.page
    page.set_viewport_size({"width": WIDE[0], "height": WIDE[1]})
    settle(page)
    assert_fits(page, f"{name} at 1280 px")
    assert_accessible(page, f"{name} at 1280 px")
    visitor.screenshot(f"{name} 1280")
    page.set_viewport_size({"width": NARROW[0], "height": NARROW[1]})
    settle(page)
    visitor.check(name)


def settle(page: Page) -> None:
    """Two animation frames: the page is laid out at its new width before it is measured."""
    page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def assert_fits(page: Page, name: str) -> None:
    seen = page.evaluate(OVERFLOW)  # the harness's measure, naming what reaches past the viewport
    assert seen["scroll"] <= seen["width"], f"{name}: scrolls sideways: {seen}"


def mails_to(data_dir: Path, address: str) -> int:
    """How many messages the service queued for ``address`` (sent or not): its outbox table."""
    with sqlite3.connect(data_dir / "agentgate.db") as db:
        return db.execute("SELECT count(*) FROM mail_outbox WHERE to_addr = ?", (address,)).fetchone()[0]


def sign_in_as_admin(visitor: Visitor) -> None:
    page = visitor.open("/app/login")
    page.get_by_test_id("login-email").fill(ADMIN_EMAIL)
    page.get_by_test_id("login-password").fill(ADMIN_PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url("**/app")
