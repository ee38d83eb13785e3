"""Journey: a webhook managed in the dashboard. Registered, its URL and events edited, disabled and
enabled, a test event sent (received by a real receiver on loopback, signed with the secret shown
once), a new signing secret (the next test event is signed with it), deleted after a confirmation;
and the usage alerts saved. At 375 and 1280 px, axe-core clean."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from agent_server.webhooks.signing import platform_signature
from tests.accounts.smtp import SmtpServer
from tests.admin.conftest import Receiver, _handler
from tests.browser.dashboard import go_to, register
from tests.browser.harness import Visitor
from tests.browser.manage import check_both

pytestmark = pytest.mark.browser


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    received = Receiver(server)
    server.RequestHandlerClass = _handler(received)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield received
    server.shutdown()
    server.server_close()


def test_a_webhook_is_edited_disabled_tested_given_a_new_secret_and_deleted(
    visitor: Visitor, smtp: SmtpServer, receiver: Receiver
) -> None:
    register(visitor, smtp, "grace@compilers.example", "Compilers Inc", plan="professional")
    page = visitor.page
    go_to(page, "webhooks")
    page.get_by_test_id("webhook-url").fill(f"{receiver.url}/old")
    page.get_by_test_id("webhook-create").click()
    secret = page.get_by_test_id("secret-value").input_value()
    page.get_by_test_id("to-webhook").click()
    check_both(visitor, "the webhook's page")

    page.get_by_test_id("edit-url").fill(receiver.url)
    page.get_by_test_id("edit-event-audit.flagged").uncheck()
    page.get_by_test_id("edit-description").fill("billing service")
    page.get_by_test_id("webhook-save").click()
    expect(page.get_by_test_id("deliveries-notice")).to_have_text("The changes are saved.")
    expect(page.get_by_test_id("webhook-facts")).not_to_contain_text("audit.flagged")
    expect(page.get_by_role("heading", level=1)).to_contain_text(receiver.url)

    page.get_by_test_id("webhook-disable").click()
    expect(page.get_by_test_id("webhook-state")).to_have_text("disabled")
    expect(page.get_by_test_id("webhook-test")).to_be_disabled()
    check_both(visitor, "a disabled webhook")
    page.get_by_test_id("webhook-enable").click()
    expect(page.get_by_test_id("webhook-state")).to_have_text("enabled")

    page.get_by_test_id("webhook-test").click()
    expect(page.get_by_test_id("webhook-test-result")).to_contain_text(
        "Your receiver accepted the test event: HTTP 200"
    )
    expect(page.get_by_test_id("delivery-row")).to_have_count(1)
    check_both(visitor, "the test event's result")
    [first] = receiver.requests
    assert first.path == "/hook" and first.json()["type"] == "webhook.test"
    assert first.headers["x-platform-signature"] == platform_signature(secret, first.body)

    page.get_by_test_id("webhook-rotate-secret").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("A new signing secret")
    new_secret = page.get_by_test_id("secret-value").input_value()
    assert new_secret.startswith("whsec_") and new_secret != secret
    check_both(visitor, "the new signing secret, shown once")
    page.get_by_test_id("to-webhook").click()
    assert new_secret not in page.content()
    page.get_by_test_id("webhook-test").click()
    expect(page.get_by_test_id("webhook-test-result")).to_be_visible()
    assert receiver.requests[-1].headers["x-platform-signature"] == platform_signature(
        new_secret, receiver.requests[-1].body
    )

    page.get_by_test_id("webhook-delete").click()
    check_both(visitor, "confirm deleting the webhook")
    page.get_by_test_id("webhook-delete-confirm").click()
    expect(page.get_by_test_id("webhooks-notice")).to_contain_text("is deleted")
    expect(page.get_by_test_id("webhooks-empty")).to_be_visible()

    page.get_by_test_id("usage-alerts-percents").fill("25, 75, 100")
    page.get_by_test_id("usage-alerts-save").click()
    expect(page.get_by_test_id("webhooks-notice")).to_have_text("The usage alerts are saved.")
    expect(page.get_by_test_id("usage-alerts-percents")).to_have_value("25, 75, 100")
    check_both(visitor, "webhooks with the usage alerts saved")


def test_a_plan_without_webhooks_shows_the_form_disabled_with_the_plan_that_has_them(
    visitor: Visitor, smtp: SmtpServer
) -> None:
    register(visitor, smtp, "linus@kernels.example", "Kernels Ltd")
    page = visitor.page
    go_to(page, "webhooks")
    gate = page.get_by_test_id("plan-gate-webhooks")
    expect(gate).to_contain_text("The Starter plan does not include webhooks.")
    expect(gate).to_contain_text("The Professional plan does")
    expect(page.get_by_test_id("webhook-url")).to_be_disabled()
    expect(page.get_by_test_id("webhook-create")).to_be_disabled()
    check_both(visitor, "webhooks on the Starter plan")
    page.get_by_test_id("plan-gate-upgrade").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    assert page.url.endswith("/app/billing")
