"""Journey: a new organisation with no traffic sees how to make its first request; the snippets
shown work as pasted (curl, the Python openai and anthropic SDKs, run as programs with the new key in
AGENTGATE_API_KEY); then the usage page shows the month against the plan, charts whose columns tell
their value on hover and on keyboard focus, and the tables; at 375 and 1280 px, axe-clean, with
no chart text cut off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Page, expect

from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import register
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

    page.get_by_test_id("nav-keys").click()
    page.get_by_test_id("key-name").fill("laptop")
    page.get_by_test_id("key-create").click()
    key = page.get_by_test_id("secret-value").input_value()

    page.get_by_test_id("nav-usage").click()
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

    page.get_by_test_id("nav-app").click()
    expect(page.get_by_test_id("first-request")).to_have_count(0)
    expect(page.get_by_test_id("month-requests")).to_have_text("3")
