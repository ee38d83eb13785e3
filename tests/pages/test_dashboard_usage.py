"""The usage page: per-day and per-model charts (SVG with a title and a description) and the same
numbers as tables, from the report of GET /admin/usage."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agent_server.gateway.usage import UsageRow
from agent_server.settings import Settings
from tests.gateway.conftest import chat_body, key_headers
from tests.pages.dashboard import Dash, dashboard_world, post_form
from tests.pages.html import parse


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_usage_is_charted_per_day_and_per_model_with_a_text_alternative(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    created = await post_form(browser, "/app/keys", "/app/keys", name="load", scopes=["chat"])
    key = re.search(r'readonly value="(sk_test_\w+)"', created.text).group(1)  # type: ignore[union-attr]
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as c:
        for _ in range(3):
            assert (
                await c.post("/v1/chat/completions", json=chat_body(), headers=key_headers(key))
            ).status_code == 200
        bad = await c.post(
            "/v1/chat/completions", json=chat_body(model="no-such-model"), headers=key_headers(key)
        )
        assert bad.status_code == 400
    # A priced request of yesterday (live keys are charged; sandbox keys never are).
    yesterday = dash.clock.now() - 86_400
    row = UsageRow(
        tenant_id=person.tenant_id,
        key_id="key_live",
        model="agentgate-mock-large",
        endpoint="chat.completions",
        prompt_tokens=1000,
        completion_tokens=500,
        latency_ms=12.0,
        status=200,
        backend="mock",
        stream=False,
        created_at=yesterday,
        cost_micros=2_500_000_000,
        currency="EUR",
    )
    await dash.app.state.gateway.usage.append(row)

    page = await browser.get("/app/usage")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    html = parse(page.text)
    charts = {e.attrs["data-test"] for e in html.all("figure")}
    assert charts == {f"chart-{prefix}-{metric}" for prefix in ("day", "model")
                      for metric in ("requests", "total_tokens", "errors", "cost")}  # fmt: skip
    for svg in html.all("svg"):
        assert svg.attrs["role"] == "img" and len(svg.attrs["aria-labelledby"].split()) == 2
    titles = [e.text for e in html.all("title")]
    assert "Requests per day" in titles and "Cost per model" in titles
    today = datetime.fromtimestamp(dash.clock.now(), UTC).date()
    assert re.search(rf"<th scope=\"row\">{today}</th><td>4</td>", page.text)  # 3 answered, 1 refused
    assert re.search(
        rf"<th scope=\"row\">{today - timedelta(days=1)}</th><td>1</td><td>1,500</td>", page.text
    )
    assert "25.0000 EUR" in page.text  # 2.5e9 millionths of a cent
    assert "<code>agentgate-mock-large</code>" in page.text and "<code>no-such-model</code>" in page.text
    assert (
        'aria-labelledby="chart-day-errors-title chart-day-errors-desc"' not in page.text
    )  # ids are per chart
    desc = re.search(r'<desc id="day-requests-desc">([^<]+)</desc>', page.text).group(1)  # type: ignore[union-attr]
    assert "30 bars" in desc and "the highest is 4" in desc and "the total 5" in desc


async def test_the_period_is_chosen_and_checked(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    week = await browser.get("/app/usage", params={"start": "2026-01-01", "end": "2026-01-07"})
    assert week.status_code == 200 and "7 bars from 2026-01-01 to 2026-01-07" in week.text
    assert 'data-test="usage-empty"' in week.text
    backwards = await browser.get("/app/usage", params={"start": "2026-01-07", "end": "2026-01-01"})
    assert backwards.status_code == 400 and "start" in backwards.text
    too_long = await browser.get("/app/usage", params={"start": "2024-01-01", "end": "2026-01-01"})
    assert too_long.status_code == 400
