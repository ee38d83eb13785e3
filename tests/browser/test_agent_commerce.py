"""Journey: the platform administrator adds an agent platform on /app/agent-commerce (its credential
and signing secret shown once), the platform buys a training over ACP with that credential, its order
event arrives signed at a loopback receiver, the administrator changes the platform's webhook URL and
marks the order fulfilled on the page (the order_update event follows, to the new URL), revokes the platform, and its credential then gets 401; a taken
name is refused on the page. At 375 and 1280 px, axe-clean."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from tests.admin.conftest import Receiver, _handler
from tests.browser.dashboard import go_to
from tests.browser.harness import Visitor
from tests.browser.live import ThreadedServer
from tests.browser.pages import ADMIN_EMAIL, ADMIN_PASSWORD
from tests.browser.widths import check_both_widths
from tests.commerce.conftest import TRAINING, VERSION, payment
from tests.commerce.test_order_webhooks import assert_webhook_event, verify

pytestmark = pytest.mark.browser


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The app with a platform admin, bootstrapped at its first start."""
    return settings.model_copy(
        update={"admin_email": ADMIN_EMAIL, "admin_password": SecretStr(ADMIN_PASSWORD)}
    )


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


def acp(server: ThreadedServer, credential: str, path: str, body: dict[str, Any]) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {credential}",
        "API-Version": VERSION,
        "Idempotency-Key": str(uuid.uuid4()),
    }
    return httpx.post(f"{server.url}/agentic_commerce{path}", json=body, headers=headers, timeout=30)


def event_number(receiver: Receiver, count: int) -> dict[str, Any]:
    """The ``count``-th event the receiver got (1-based), waiting for the webhook worker to send it."""
    deadline = time.monotonic() + 30
    while len(receiver.requests) < count:
        assert time.monotonic() < deadline, f"only {len(receiver.requests)} events arrived"
        time.sleep(0.1)
    return json.loads(receiver.requests[count - 1].body)


def test_a_platform_added_on_the_page_buys_is_fulfilled_and_revoked(
    visitor: Visitor, server: ThreadedServer, receiver: Receiver
) -> None:
    page = visitor.page
    visitor.open("/app/login")
    page.get_by_test_id("login-email").fill(ADMIN_EMAIL)
    page.get_by_test_id("login-password").fill(ADMIN_PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url("**/app")
    go_to(page, "agent-commerce")
    expect(page.get_by_test_id("agent-platforms-empty")).to_be_visible()
    check_both_widths(visitor, "agent commerce, nothing yet")

    page.get_by_test_id("agent-platform-name").fill("Lovelace Assistant")
    page.get_by_test_id("agent-platform-webhook-url").fill(receiver.url)
    page.get_by_test_id("agent-platform-create").click()
    credential = page.get_by_test_id("agent-platform-credential").input_value()
    secret = page.get_by_test_id("agent-platform-signing-secret").input_value()
    assert credential.startswith("acp_") and secret.startswith("whsec_")
    check_both_widths(visitor, "the new platform's credential, shown once")

    session = acp(server, credential, "/checkout_sessions", {
        "currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {},
        "buyer": {"email": "ada@lovelace.example", "full_name": "Ada Lovelace"},
    })  # fmt: skip
    assert session.status_code == 201, session.text
    done = acp(server, credential, f"/checkout_sessions/{session.json()['id']}/complete", payment())
    assert done.status_code == 200, done.text
    order_id = done.json()["order"]["id"]
    created = event_number(receiver, 1)
    verify(secret, receiver.requests[0].headers, receiver.requests[0].body)
    assert created["type"] == "order_create" and created["data"]["id"] == order_id

    page.get_by_test_id("back-to-agent-commerce").click()
    platform = page.get_by_test_id("agent-platform-row").filter(has_text="Lovelace Assistant")
    platform.get_by_test_id("agent-platform-webhook-edit").fill(f"{receiver.url}/moved")
    platform.get_by_test_id("agent-platform-webhook-save").click()
    expect(page.get_by_test_id("agent-commerce-notice")).to_contain_text("new address")
    expect(platform.get_by_test_id("agent-platform-webhook-edit")).to_have_value(f"{receiver.url}/moved")
    row = page.locator(f'[data-order-id="{order_id}"]')
    expect(row.get_by_test_id("agent-order-status")).to_have_text("confirmed")
    expect(page.locator("main")).not_to_contain_text(credential)
    row.get_by_test_id("agent-order-fulfil").click()
    expect(page.get_by_test_id("agent-commerce-notice")).to_contain_text("fulfilled")
    expect(row.get_by_test_id("agent-order-status")).to_have_text("fulfilled")
    expect(row.get_by_test_id("agent-order-fulfil")).to_have_count(0)
    updated = event_number(receiver, 2)
    assert receiver.requests[1].path == "/hook/moved"  # where the page said to send it
    verify(secret, receiver.requests[1].headers, receiver.requests[1].body)
    assert_webhook_event(updated)
    assert updated["type"] == "order_update" and updated["data"]["status"] == "completed"
    check_both_widths(visitor, "an order fulfilled")

    platform.get_by_test_id("agent-platform-revoke").click()
    expect(page.get_by_test_id("agent-commerce-notice")).to_contain_text("revoked")
    expect(platform.get_by_test_id("agent-platform-status")).to_have_text("revoked")
    refused = acp(
        server, credential, "/checkout_sessions", {"currency": "eur", "line_items": [{"id": TRAINING}]}
    )
    assert refused.status_code == 401 and refused.json()["code"] == "invalid_credential"
    check_both_widths(visitor, "the platform revoked")

    visitor.announce("/app/agent-commerce/platforms", 409)
    page.get_by_test_id("agent-platform-name").fill("Lovelace Assistant")
    page.get_by_test_id("agent-platform-create").click()
    expect(page.get_by_test_id("form-error")).to_contain_text("exists already")
    expect(page.get_by_test_id("agent-platform-name")).to_have_value("Lovelace Assistant")
    check_both_widths(visitor, "a taken name refused")
