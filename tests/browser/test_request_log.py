"""Journey: a new user registers, creates a live key in the dashboard, gives it a budget (through the
key API), calls a priced model with the official openai SDK, finds the call in Requests with its
cost, and opens its details: at 375 px (request id, status and model in view) and at 1280 px."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from playwright.sync_api import expect

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from tests.accounts.conftest import PASSWORD
from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, register
from tests.browser.live import ThreadedServer
from tests.llm.fake_upstream import FakeUpstream

pytestmark = pytest.mark.browser
MODEL, UPSTREAM_MODEL = "gpt-4o-logged", "upstream-logged"  # granted to Professional by gpt-4o*
# 2,500 and 10,000 EUR per million tokens: the fake upstream's 11 + 5 tokens cost 7.75 cents.
PRICE = {"input": 250_000, "output": 1_000_000}
COST = "0.08 EUR"  # 7.75 cents, in the one money format of the pages (pages/money.py)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, upstream: FakeUpstream) -> Settings:
    config = UpstreamConfig.model_validate(
        {
            "name": "up",
            "base_url": upstream.base_url,
            "models": {MODEL: {"upstream": UPSTREAM_MODEL, "price": PRICE}},
        }
    )
    return Settings(
        data_dir=tmp_path, redis_url=None, database_url=None, mode="production", upstreams=[config]
    )


def test_a_priced_sdk_call_is_found_in_requests_with_its_cost(
    open_visitor: OpenVisitor, server: ThreadedServer, smtp: SmtpServer
) -> None:
    visitor = open_visitor()
    page = visitor.page
    email = "grace@compilers.example"
    register(visitor, smtp, email, "Compilers Inc", plan="professional")

    go_to(page, "logs")
    expect(page.get_by_test_id("logs-empty")).to_be_visible()
    visitor.check("requests, none yet")

    go_to(page, "keys")
    page.get_by_test_id("key-name").fill("priced")
    page.get_by_test_id("key-create").click()
    secret = page.get_by_test_id("secret-value").input_value()
    assert secret.startswith("sk_live_")
    with httpx.Client(base_url=server.url) as api:
        token = api.post("/admin/auth/login", json={"email": email, "password": PASSWORD}).json()[
            "access_token"
        ]
        admin = {"Authorization": f"Bearer {token}"}
        (key,) = api.get("/admin/api-keys", headers=admin).json()["data"]
        budget = {"budget": {"period": "month", "max_spend": 500}}
        changed = api.patch(f"/admin/api-keys/{key['id']}", json=budget, headers=admin)
        assert changed.status_code == 200 and changed.json()["budget"]["max_spend"] == 500

    with openai.OpenAI(base_url=f"{server.url}/v1", api_key=secret, max_retries=0, timeout=10) as client:
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "Hello from the request log journey"}]
        )
    request_id = raw.headers["x-request-id"]
    usage = raw.parse().usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (11, 5)

    go_to(page, "logs")
    row = page.locator(f'[data-test="log-row"][data-request-id="{request_id}"]')
    expect(row).to_have_count(1)
    expect(row.get_by_test_id("log-cost")).to_have_text(COST)
    expect(row.get_by_test_id("log-status")).to_have_text("200")
    for cell in (row.get_by_test_id("log-link"), row.get_by_test_id("log-status"), row.locator("td").nth(1)):
        box = cell.bounding_box()  # at 375 px: id, status and model shown without scrolling sideways
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, box
    expect(row.locator("td").nth(1)).to_contain_text(MODEL)
    visitor.check("requests with the call at 375 px")
    page.set_viewport_size({"width": 1280, "height": 900})
    visitor.check("requests with the call at 1280 px")

    row.get_by_test_id("log-link").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(request_id)
    facts = page.get_by_test_id("log-facts")
    expect(facts.get_by_test_id("log-cost")).to_have_text(COST)
    expect(facts).to_contain_text(UPSTREAM_MODEL)
    expect(facts).to_contain_text("priced")
    expect(page.get_by_test_id("log-no-body")).to_be_visible()
    visitor.check("request details at 1280 px")
    page.set_viewport_size({"width": 375, "height": 812})
    visitor.check("request details at 375 px")
    page.get_by_test_id("log-key-link").click()
    expect(page.locator('[data-test="log-row"]')).to_have_count(1)
