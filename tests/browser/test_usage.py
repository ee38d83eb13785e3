"""Journey: a new organisation with no traffic sees how to make its first request; the snippets
shown work as pasted (curl, the Python openai and anthropic SDKs, run as programs with the new key in
AGENTGATE_API_KEY); then the usage page shows the month against the plan, charts whose columns tell
their value on hover and on keyboard focus, and the tables; at 375 and 1280 px, axe-clean, with
no chart text cut off."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import Tenant, UsageRecord
from agent_server.storage.db import Database
from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, register
from tests.browser.harness import Visitor
from tests.browser.live import ThreadedServer
from tests.browser.widths import check_both_widths

pytestmark = pytest.mark.browser

# Chart text (labels, markers, the readout of every column) that reaches outside its chart.
CUT_OFF = """() => [...document.querySelectorAll("svg.chart-svg")].flatMap((svg) => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll("text")].map((t) => [t, t.getBoundingClientRect()])
    .filter(([, r]) => r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
    .map(([t, r]) => `${svg.closest("figure").dataset.test}: "${t.textContent.trim()}" (${Math.round(r.left)}..${Math.round(r.right)} of ${Math.round(box.left)}..${Math.round(box.right)})`);
})"""


def run_snippet(page: Page, snippet: str, key: str) -> str:
    """The snippet's text as the page shows it, run as pasted with the key in AGENTGATE_API_KEY."""
    code = page.get_by_test_id(f"snippet-{snippet}").input_value()
    env = {name: value for name, value in os.environ.items() if "proxy" not in name.lower()}
    env["AGENTGATE_API_KEY"] = key
    command = ["bash", "-c", code] if snippet == "curl" else [sys.executable, "-c", code]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, (snippet, code, done.stdout, done.stderr)
    return done.stdout


def no_chart_text_cut_off(page: Page, name: str) -> None:
    assert page.evaluate(CUT_OFF) == [], name


def check(visitor: Visitor, name: str) -> None:
    check_both_widths(visitor, name, no_chart_text_cut_off)


def test_a_first_request_from_the_snippets_then_usage_at_a_glance(
    open_visitor: OpenVisitor, server: ThreadedServer, smtp: SmtpServer
) -> None:
    visitor = open_visitor()
    page = visitor.page
    register(visitor, smtp, "grace@compilers.example", "Compilers Ltd")
    expect(page.get_by_test_id("first-request")).to_be_visible()
    expect(page.get_by_test_id("first-request-base-url")).to_have_text(f"{server.url}/v1")
    expect(page.get_by_test_id("month-quota")).to_have_text("0 of 2,000,000 (0.0 %)")
    check(visitor, "overview before the first request")

    go_to(page, "keys")
    page.get_by_test_id("key-name").fill("laptop")
    page.get_by_test_id("key-create").click()
    key = page.get_by_test_id("secret-value").input_value()

    go_to(page, "usage")
    expect(page.get_by_test_id("usage-empty")).to_be_visible()
    expect(page.get_by_test_id("month-requests")).to_have_text("0")
    check(visitor, "usage, empty")
    answer = json.loads(run_snippet(page, "curl", key))
    assert answer["object"] == "chat.completion" and answer["choices"][0]["message"]["content"]
    assert "sandbox model agentgate-mock-small" in run_snippet(page, "python-openai", key)
    assert "sandbox model agentgate-mock-small" in run_snippet(page, "python-anthropic", key)

    page.reload()
    expect(page.get_by_test_id("month-requests")).to_have_text("3")
    expect(page.get_by_test_id("usage-empty")).to_have_count(0)
    today = datetime.now(UTC).date().isoformat()
    chart = page.get_by_test_id("chart-day-requests")
    column = chart.locator(".chart-mark")
    expect(column).to_have_count(1)  # the days without requests are left out
    readout = column.locator(".chart-readout")
    expect(readout).to_be_hidden()
    # The keyboard: the next stop after the period's button is the first column, which tells its value.
    page.get_by_test_id("usage-show").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == f"{today}: 3 requests"
    expect(readout).to_be_visible()
    expect(readout).to_have_text(f"{today}: 3 requests")
    check(visitor, "usage, a column focused")
    page.get_by_test_id("usage-show").focus()
    expect(readout).to_be_hidden()
    column.locator(".chart-hit").hover()  # the pointer (over the column, not its hidden readout)
    expect(readout).to_be_visible()
    tokens = page.get_by_test_id("chart-day-total_tokens").locator(".chart-mark")
    tokens.locator(".chart-hit").hover()
    expect(tokens.locator(".chart-readout")).to_contain_text(f"{today}: ")
    expect(readout).to_be_hidden()

    days = page.get_by_test_id("usage-days").locator("tbody tr")
    expect(days.filter(has_text=today).locator("td").first).to_have_text("3")
    expect(page.get_by_test_id("usage-gap").first).to_contain_text("No requests")
    models = page.get_by_test_id("usage-models").locator("tbody tr")
    expect(models).to_have_count(1)
    expect(models.locator("th")).to_have_text("agentgate-mock-small")
    keys = page.get_by_test_id("usage-keys").locator("tbody tr")
    expect(keys.locator("th")).to_contain_text("laptop")
    expect(page.get_by_test_id("chart-key-requests").locator(".bar-value")).to_have_text("3")
    check(visitor, "usage with three requests")

    go_to(page, "app")
    expect(page.get_by_test_id("first-request")).to_have_count(0)
    expect(page.get_by_test_id("month-requests")).to_have_text("3")


LONG_MODEL = "a-rather-long-model-identifier-declared-in-the-upstream-settings-2025-04-14"


def add_history(settings: Settings, organisation: str, days: int) -> None:
    """Rows of the last ``days`` days, as the usage writer would have written them: two live keys with
    long names, a long model id, every third day without requests, amounts from a fraction of a cent
    to over a hundred euros."""

    async def write() -> None:
        db = Database(settings)
        try:
            async with db.session() as session:
                tenant = (
                    await session.execute(select(Tenant).where(Tenant.name == organisation))
                ).scalar_one()
                now = datetime.now(UTC)
                keys = []
                for name in ("nightly batch jobs of the search and recommendations team", "web"):
                    record, _ = repo.new_key(now.timestamp(), tenant.id, name, ["chat"], "live")
                    session.add(record)
                    keys.append(record.id)
                for back in range(1, days):
                    if back % 3 == 0:
                        continue
                    for n, (key, model) in enumerate(zip(keys, (LONG_MODEL, "gpt-4o-mini"), strict=True)):
                        session.add(
                            UsageRecord(
                                tenant_id=tenant.id, key_id=key, model=model, endpoint="chat",
                                prompt_tokens=1000 * back * (n + 1), completion_tokens=333 * back, latency_ms=40.0,
                                status=200 if back % 7 else 500, backend="up", stream=False,
                                created_at=now - timedelta(days=back), cost_micros=310_000 * back**3 * (n + 1),
                                currency="EUR",
                            )
                        )  # fmt: skip
        finally:
            await db.dispose()

    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API runs an event loop in this thread
        thread.submit(asyncio.run, write()).result()


def test_a_busy_period_reads_at_both_widths(
    open_visitor: OpenVisitor, server: ThreadedServer, smtp: SmtpServer, settings: Settings
) -> None:
    visitor = open_visitor()
    page = visitor.page
    register(visitor, smtp, "edsger@structured.example", "Structured Programming GmbH", plan="professional")
    add_history(settings, "Structured Programming GmbH", days=60)
    start = (datetime.now(UTC).date() - timedelta(days=59)).isoformat()
    visitor.open(f"/app/usage?start={start}")
    columns = page.get_by_test_id("chart-day-cost").locator(".chart-mark")
    expect(columns).to_have_count(40)  # 59 days back, every third one (19) without requests
    expect(page.get_by_test_id("chart-day-errors")).to_be_visible()  # some days had errors
    expect(
        page.get_by_test_id("chart-model-cost").locator(".bar-label").filter(has_text=LONG_MODEL)
    ).to_have_count(1)
    # The last and the first column: their readouts are inside the chart (CUT_OFF checks them all).
    columns.last.focus()
    expect(columns.last.locator(".chart-readout")).to_be_visible()
    check(visitor, "a busy period, the last column focused")
    columns.first.focus()
    expect(columns.first.locator(".chart-readout")).to_contain_text(" EUR")
    check(visitor, "a busy period, the first column focused")
