"""The usage page and the overview: the month so far against the plan, the period by day (days
without requests collapsed), by model and by key as SVG charts whose columns are focusable and named,
the same numbers as tables, money with the precision it needs, the empty state with the first-request
snippets, and the period's days checked as GET /admin/usage checks them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway import repository as repo
from agent_server.gateway.usage import UsageRow
from agent_server.knowledge.pack import shipped_content_dir
from tests.gateway.conftest import chat_body, key_headers
from tests.pages.dashboard import Dash, Person, dashboard_world, post_form
from tests.pages.html import parse

DAY = 86_400


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def row(person: Person, key_id: str, model: str, at: float, tokens: tuple[int, int], cost: int) -> UsageRow:
    return UsageRow(
        tenant_id=person.tenant_id,
        key_id=key_id,
        model=model,
        endpoint="chat",
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        latency_ms=12.0,
        status=200,
        backend="mock",
        stream=False,
        created_at=at,
        cost_micros=cost,
        currency="EUR" if cost else None,
    )


async def sandbox_calls(dash: Dash, key: str) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as c:
        for _ in range(3):
            answer = await c.post("/v1/chat/completions", json=chat_body(), headers=key_headers(key))
            assert answer.status_code == 200
        bad = await c.post(
            "/v1/chat/completions", json=chat_body(model="no-such-model"), headers=key_headers(key)
        )
        assert bad.status_code == 400
        assert (
            await c.get("/v1/models", headers=key_headers(key))
        ).status_code == 200  # a row without a model


async def test_usage_reads_at_a_glance(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    created = await post_form(browser, "/app/keys", "/app/keys", name="backend", scopes=["chat", "models"])
    key = re.search(r'readonly value="(sk_test_\w+)"', created.text).group(1)  # type: ignore[union-attr]
    await sandbox_calls(dash, key)
    # A live key of the tenant, with priced rows: yesterday's and one of ten days ago worth a fraction of a cent.
    live, _ = repo.new_key(dash.clock.now(), person.tenant_id, "billing job", ["chat"], "live")
    await repo.add_key(dash.app.state.services.db, live)
    now = dash.clock.now()
    gateway = dash.app.state.gateway
    await gateway.usage.append(
        row(person, live.id, "agentgate-mock-large", now - DAY, (1000, 500), 2_500_000_000)
    )
    await gateway.usage.append(row(person, live.id, "agentgate-mock-large", now - 10 * DAY, (20, 0), 310_000))

    page = await browser.get("/app/usage")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    html = parse(page.text)
    today = datetime.fromtimestamp(now, UTC).date()
    month_start = today.replace(day=1)

    # The month so far against the plan: live tokens against Professional's 20,000,000.
    figures = {
        e.attrs["data-test"]: e.text.strip()
        for e in html.elements
        if e.attrs.get("data-test", "").startswith("month-")
    }
    live_rows_this_month = [
        d for d in (today - timedelta(days=1), today - timedelta(days=10)) if d >= month_start
    ]
    live_tokens = sum(1500 if d == today - timedelta(days=1) else 20 for d in live_rows_this_month)
    assert figures["month-quota"] == f"{live_tokens:,} of 20,000,000 (0.0 %)"
    assert figures["month-spend"].endswith(" EUR")
    meter = html.all("meter")[0].attrs
    assert (meter["max"], meter["value"]) == ("20000000", str(live_tokens))

    charts = {e.attrs["data-test"] for e in html.all("figure")}
    assert charts == {f"chart-{split}-{metric}" for split in ("day", "model", "key")
                      for metric in ("requests", "total_tokens", "errors", "cost")}  # fmt: skip
    # By day: only the three days with requests are columns, each focusable and named; a marker stands
    # for each run of days without requests (the 19 days of the period before the first, 8 between).
    requests_chart = page.text.split('data-test="chart-day-requests"')[1].split("</figure>")[0]
    marks = re.findall(r'<g class="chart-mark" tabindex="0" role="img" aria-label="([^"]+)">', requests_chart)
    assert marks == [
        f"{today - timedelta(days=10)}: 1 requests",
        f"{today - timedelta(days=1)}: 1 requests",
        f"{today}: 5 requests",  # 3 answered, 1 refused, 1 model list
    ]
    assert requests_chart.count('class="chart-gap"') == 2
    assert "the highest is 5" in requests_chart and "the total 7." in requests_chart
    assert "Days without requests are left out." in requests_chart
    for svg in html.all("svg"):
        assert "viewBox" not in svg.attrs or svg.attrs.get("aria-hidden") == "true"  # text is never scaled
    # The same numbers as a table, a line per run of days without requests.
    days = page.text.split('data-test="usage-days"')[1].split("</table>")[0]
    assert re.search(rf'<th scope="row">{today}</th><td>5</td>', days)
    assert f'<th scope="row">{today - timedelta(days=9)} to {today - timedelta(days=2)}</th>' in days
    assert "No requests (8 days)" in days
    # Money with the precision it needs: 25.00 EUR, and a fraction of a cent as such, not 0.00.
    assert "25.00 EUR" in page.text and "0.0031 EUR" in page.text and "0.0000" not in page.text
    # By model: the row of GET /v1/models is named, not blank; by key: names, not ids.
    models = page.text.split('data-test="usage-models"')[1].split("</table>")[0]
    assert (
        "(model list)" in models
        and "<code>no-such-model</code>" in models
        and '<th scope="row"></th>' not in models
    )
    keys = page.text.split('data-test="usage-keys"')[1].split("</table>")[0]
    assert "backend<br><code>sk_test_…" in keys and "billing job<br><code>sk_live_…" in keys
    assert "first-request" not in page.text  # there is traffic


async def test_the_empty_state_shows_how_to_make_a_first_request(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    page = await browser.get("/app/usage", params={"start": "2026-01-01", "end": "2026-01-07"})
    assert page.status_code == 200
    assert (
        'data-test="usage-empty"' in page.text and "No requests from 2026-01-01 to 2026-01-07." in page.text
    )
    assert "<figure" not in page.text and "<table" not in page.text
    html = parse(page.text)
    snippets = {e.attrs["data-test"]: e.text for e in html.all("textarea")}
    assert set(snippets) == {
        "snippet-curl",
        "snippet-python-openai",
        "snippet-js-openai",
        "snippet-python-anthropic",
    }
    assert "curl http://127.0.0.1:8000/v1/chat/completions" in snippets["snippet-curl"]
    assert '"Authorization: Bearer $AGENTGATE_API_KEY"' in snippets["snippet-curl"]
    assert 'os.environ["AGENTGATE_API_KEY"]' in snippets["snippet-python-openai"]
    assert "process.env.AGENTGATE_API_KEY" in snippets["snippet-js-openai"]
    assert 'Anthropic(base_url="http://127.0.0.1:8000"' in snippets["snippet-python-anthropic"]
    assert all('"agentgate-mock-small"' in code for code in snippets.values())  # Starter's first chat model


async def test_the_overview_helps_until_the_first_request(dash: Dash) -> None:
    person = await dash.person(plan="starter")
    browser = await dash.signed_in(person)
    overview = await browser.get("/app")
    assert 'data-test="first-request"' in overview.text and 'data-test="usage-month"' in overview.text
    assert "0 of 2,000,000 (0.0 %)" in overview.text
    await dash.app.state.gateway.usage.append(
        row(person, "key_x", "agentgate-mock-small", dash.clock.now(), (3, 4), 0)
    )
    overview = await browser.get("/app")
    assert 'data-test="first-request"' not in overview.text
    assert re.search(r'data-test="month-tokens">7<', overview.text)


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"end": "9999-12-31"}, "end"),  # was a 500: the day after it does not exist
        ({"end": "0001-01-01"}, "end"),  # was a 500: its default start, 29 days before, does not exist
        ({"start": "0001-01-01"}, "start"),
        ({"start": "2026-01-07", "end": "2026-01-01"}, "start"),
        ({"start": "2024-01-01", "end": "2026-01-01"}, "start"),  # more than 366 days
    ],
)
async def test_a_bad_period_is_a_400_page_naming_the_parameter(
    dash: Dash, params: dict[str, str], param: str
) -> None:
    browser = await dash.signed_in(await dash.person())
    answer = await browser.get("/app/usage", params=params)
    assert answer.status_code == 400 and "text/html" in answer.headers["content-type"]
    assert param in parse(answer.text).all("main")[0].text


async def test_the_calendar_limits_are_periods(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    last = await browser.get("/app/usage", params={"end": "9999-12-30"})
    assert last.status_code == 200 and "From 9999-12-01 to 9999-12-30" in last.text
    first = await browser.get("/app/usage", params={"end": "1970-01-01"})
    assert first.status_code == 200 and "From 1970-01-01 to 1970-01-01" in first.text


async def test_a_live_deployment_offers_a_model_its_routing_table_serves(
    settings: Settings, tmp_path: Path
) -> None:
    plans = yaml.safe_load((shipped_content_dir() / "plans.yaml").read_text())
    plans["plans"][0]["models"] = ["gpt-4o-mini", "gpt-4o"]  # Starter, without the mock models
    content = tmp_path / "content"
    content.mkdir()
    (content / "plans.yaml").write_text(yaml.safe_dump(plans))
    upstream = UpstreamConfig.model_validate(
        {"name": "up", "base_url": "http://127.0.0.1:9/v1", "models": {"gpt-4o": "m"}}
    )
    async with dashboard_world(
        settings,
        mode="production",
        public_base_url="https://127.0.0.1:8000",  # production cookies are Secure: an https address
        upstreams=[upstream],
        content_dir=content,
    ) as world:
        browser = await world.signed_in(await world.person(plan="starter"))
        snippet = parse((await browser.get("/app")).text).all("textarea")[0].text
        # gpt-4o-mini comes first in the table, but live keys reach only what the routing table serves.
        assert '"model": "gpt-4o"' in snippet, snippet
