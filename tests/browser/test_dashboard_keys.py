"""Journey 2: a new user registers in the dashboard, confirms the address from the mail, creates a
key, copies it, calls the gateway with the official openai SDK, sees the request in the usage chart,
revokes the key, and the next call fails with 401."""

from __future__ import annotations

import openai
import pytest
from playwright.sync_api import expect

from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, register
from tests.browser.live import ThreadedServer

pytestmark = pytest.mark.browser
MODEL = "agentgate-mock-small"


def test_register_create_copy_use_see_and_revoke_a_key(
    open_visitor: OpenVisitor, server: ThreadedServer, smtp: SmtpServer
) -> None:
    visitor = open_visitor(permissions=["clipboard-read", "clipboard-write"])
    page = visitor.page
    register(visitor, smtp, "ada@analytical.example", "Analytical Engines")

    go_to(visitor, "keys")
    expect(page.get_by_test_id("keys-empty")).to_be_visible()
    visitor.check("keys, none yet")
    page.get_by_test_id("key-name").fill("backend")
    page.get_by_test_id("key-create").click()
    secret = page.get_by_test_id("secret-value").input_value()
    assert secret.startswith("sk_test_") and len(secret) == 48
    page.get_by_test_id("copy-secret").click()
    expect(page.locator("#copy-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    visitor.check("the new key, shown once")

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=secret, max_retries=0, timeout=10)
    completion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hello from the dashboard journey"}]
    )
    assert completion.choices[0].message.content
    assert completion.usage is not None and completion.usage.total_tokens > 0

    go_to(visitor, "usage")
    requests_chart = page.get_by_test_id("chart-day-requests")
    expect(requests_chart.locator("desc")).to_contain_text("the highest is 1")
    expect(requests_chart.locator("desc")).to_contain_text("the total 1.")
    assert requests_chart.locator("rect.chart-bar").count() >= 1
    model_row = page.get_by_test_id("usage-models").locator("tbody tr")
    expect(model_row).to_have_count(1)
    expect(model_row.locator("th")).to_have_text(MODEL)
    expect(model_row.locator("td").first).to_have_text("1")
    visitor.check("usage with the request")

    go_to(visitor, "keys")
    row = page.get_by_test_id("key-row")
    expect(row).to_have_count(1)
    assert secret not in page.content()  # the list shows the key's prefix and end only
    row.get_by_test_id("key-revoke").click()
    visitor.check("revoke confirmation")
    page.get_by_test_id("key-revoke-confirm").click()
    expect(page.get_by_test_id("keys-notice")).to_be_visible()
    expect(page.get_by_test_id("key-row").locator(".key-status")).to_have_text("revoked")
    expect(page.get_by_test_id("key-revoke")).to_have_count(0)
    visitor.check("keys after revoking")

    with pytest.raises(openai.AuthenticationError) as refused:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Still there?"}])
    assert refused.value.status_code == 401
    assert refused.value.code == "invalid_api_key"
    client.close()
