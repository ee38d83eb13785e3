"""Journey 4: a webhook is registered in the dashboard, an event reaches a real HTTP receiver on
loopback (failing once, then accepted), and the delivery appears with its status and attempts; sent
again from the page, the same event arrives a second time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Page, expect

from agent_server.webhooks.signing import platform_signature
from tests.accounts.smtp import SmtpServer
from tests.admin.conftest import Receiver, _handler
from tests.browser.dashboard import go_to, register
from tests.browser.harness import Visitor

pytestmark = pytest.mark.browser


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback (the admin tests' handler): the queued statuses, then 200."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    received = Receiver(server)
    server.RequestHandlerClass = _handler(received)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield received
    server.shutdown()
    server.server_close()


def reload_until(page: Page, done: str, timeout: float = 15.0) -> None:
    """The deliveries page is a report of the moment: reload it until ``done`` (a JS test) holds."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(done):
        assert time.monotonic() < deadline, f"the page never showed what {done!r} looks for"
        page.wait_for_timeout(250)
        page.reload()


def test_a_webhook_registered_in_the_dashboard_shows_its_deliveries(
    visitor: Visitor, smtp: SmtpServer, receiver: Receiver
) -> None:
    register(visitor, smtp, "edsger@structured.example", "Structured Programs", plan="professional")
    page = visitor.page
    go_to(visitor, "webhooks")
    expect(page.get_by_test_id("webhooks-empty")).to_be_visible()
    visitor.check("webhooks, none yet")
    page.get_by_test_id("webhook-url").fill(receiver.url)
    page.get_by_test_id("webhook-description").fill("operations")
    page.get_by_test_id("webhook-create").click()
    secret = page.get_by_test_id("secret-value").input_value()
    assert secret.startswith("whsec_")
    visitor.check("the new webhook and its secret")

    # An event: a key rotated in the dashboard. The receiver refuses the first attempt.
    receiver.respond(500)
    go_to(visitor, "keys")
    page.get_by_test_id("key-name").fill("worker")
    page.get_by_test_id("key-create").click()
    page.get_by_test_id("back-to-keys").click()
    page.get_by_test_id("key-rotate").click()
    page.get_by_test_id("key-rotate-confirm").click()  # rotation asks first
    expect(page.get_by_role("heading", level=1)).to_have_text("Your new API key")

    go_to(visitor, "webhooks")
    page.get_by_test_id("webhook-deliveries").click()
    rows = page.get_by_test_id("delivery-row")
    reload_until(page, "document.querySelector('[data-test=delivery-status]')?.textContent === 'delivered'")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("key.rotated")
    attempts = rows.first.locator("ol li")
    expect(attempts).to_have_count(2)
    expect(attempts.nth(0)).to_contain_text(": 500,")
    expect(attempts.nth(1)).to_contain_text(": 200,")
    visitor.check("deliveries: one, after a retry")

    assert [r.path for r in receiver.requests] == ["/hook", "/hook"]
    first = receiver.requests[-1]
    assert first.headers["x-platform-signature"] == platform_signature(secret, first.body)
    assert first.json()["type"] == "key.rotated"

    page.get_by_test_id("redeliver").click()
    expect(page.get_by_test_id("deliveries-notice")).to_be_visible()
    reload_until(
        page,
        "[...document.querySelectorAll('[data-test=delivery-status]')].every((e) => e.textContent === 'delivered')",
    )
    expect(rows).to_have_count(2)
    assert len(receiver.requests) == 3
    assert receiver.requests[2].body == first.body  # the same event, so the receiver can tell a repeat
    visitor.check("deliveries after sending again")
