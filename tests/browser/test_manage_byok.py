"""Journey: the organisation's own provider key in the dashboard (Enterprise: bring your own key).
Added and shown by its last four characters only, replaced, deleted after a confirmation; the JSON
API sees the same. At 375 and 1280 px, axe-core clean."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from tests.accounts.smtp import SmtpServer
from tests.browser.dashboard import go_to, negotiate, register
from tests.browser.harness import Visitor
from tests.browser.live import ThreadedServer
from tests.browser.manage import check_both

pytestmark = pytest.mark.browser
FIRST, SECOND = "sk-own-acme-key-0001-7f3a", "sk-own-acme-key-0002-91bc"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    acme = UpstreamConfig.model_validate(
        {
            "name": "acme-eu",
            "provider": "acme",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "sk-platform-acme",
            "models": {"acme-own": {"upstream": "acme-own-v2", "byok": True}},
        }
    )
    return settings.model_copy(update={"upstreams": [acme]})


def test_a_provider_key_is_added_masked_replaced_and_deleted(
    visitor: Visitor, smtp: SmtpServer, server: ThreadedServer, settings: Settings
) -> None:
    register(visitor, smtp, "barbara@liskov.example", "Liskov Substitutions", plan="professional")
    negotiate(settings, "Liskov Substitutions")  # Enterprise: set by the operator with a contract end
    page = visitor.page
    go_to(page, "provider-keys")
    provider = page.locator('[data-test="byok-provider"][data-provider="acme"]')
    expect(provider.get_by_test_id("byok-hint")).to_have_text("none")
    expect(provider).to_contain_text("acme-own")
    check_both(visitor, "provider keys, none yet")

    provider.get_by_test_id("byok-key").fill(FIRST)
    provider.get_by_test_id("byok-save").click()
    expect(page.get_by_test_id("byok-notice")).to_contain_text("The acme key is saved")
    expect(provider.get_by_test_id("byok-hint")).to_contain_text("…7f3a")
    assert FIRST not in page.content()
    expect(provider.get_by_test_id("byok-save")).to_have_text("Replace the key")
    check_both(visitor, "a provider key, masked")

    provider.get_by_test_id("byok-key").fill(SECOND)
    provider.get_by_test_id("byok-save").click()
    expect(provider.get_by_test_id("byok-hint")).to_contain_text("…91bc")
    token = next(c["value"] for c in visitor.context.cookies() if c["name"] == "agentgate_session")
    seen = httpx.get(
        f"{server.url}/admin/byok/acme", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert seen.status_code == 200 and seen.json()["hint"] == "…91bc"

    provider.get_by_test_id("byok-delete").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete your acme key?")
    check_both(visitor, "confirm deleting the provider key")
    page.get_by_test_id("byok-delete-confirm").click()
    expect(page.get_by_test_id("byok-notice")).to_contain_text("The acme key is deleted")
    expect(provider.get_by_test_id("byok-hint")).to_have_text("none")
    gone = httpx.get(
        f"{server.url}/admin/byok/acme", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert gone.status_code == 404
