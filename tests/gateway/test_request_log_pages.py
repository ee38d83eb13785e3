"""The request log's pages over ASGI: ``/app/logs`` (rows newest first, the GET form's filters with
its empty fields, "Older" and "Newest" links, the empty state, a bad value as a 400 page) and
``/app/logs/{request_id}`` (every field, bodies of a key that keeps them, the playground trace)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agent_server.foundation.settings import Settings
from tests.conftest import BASE_URL
from tests.gateway.conftest import MODEL, PASSWORD, chat_body, key_headers
from tests.pages.dashboard import Dash, dashboard_world, post_form
from tests.pages.html import parse
from tests.pages.test_dashboard_pages import structure_problems
from tests.pages.test_pages import inline_problems

ROW = re.compile(r'data-test="log-row" data-request-id="([^"]*)"')
EMPTY_FORM = {"key": "", "model": "", "status": "", "endpoint": "", "since": "", "until": ""}


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def api(dash: Dash, email: str) -> httpx.AsyncClient:
    """A program with the person's admin token (for /v1 calls and the key API)."""
    client = httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL)
    dash.clients.append(client)
    token = (await client.post("/admin/auth/login", json={"email": email, "password": PASSWORD})).json()
    client.headers["Authorization"] = f"Bearer {token['access_token']}"
    return client


def assert_clean(answer: httpx.Response) -> None:
    page = parse(answer.text)
    assert inline_problems(page) == [] and structure_problems(page) == []


async def test_the_log_lists_filters_and_pages_a_tenants_requests(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    program = await api(dash, person.email)
    key = (await program.post("/admin/api-keys", json={"name": "web", "scopes": ["chat"]})).json()
    ids = []
    for n in range(3):
        answer = await program.post(
            "/v1/chat/completions", json=chat_body(f"hi {n}"), headers=key_headers(key["key"])
        )
        ids.append(answer.headers["x-request-id"])
        dash.clock.advance(1)
    refused = await program.post(
        "/v1/chat/completions", json=chat_body(model="nope"), headers=key_headers(key["key"])
    )
    ids.append(refused.headers["x-request-id"])

    shown = await browser.get("/app/logs")
    assert shown.status_code == 200
    assert_clean(shown)
    assert ROW.findall(shown.text) == ids[::-1]
    assert "model_not_found" in shown.text and "web" in shown.text and 'href="/app/logs"' in shown.text

    only_errors = await browser.get("/app/logs", params={**EMPTY_FORM, "status": "4xx"})
    assert ROW.findall(only_errors.text) == [ids[3]]
    by_key = await browser.get("/app/logs", params={**EMPTY_FORM, "key": key["id"], "model": MODEL})
    assert ROW.findall(by_key.text) == ids[2::-1]
    assert f'<option value="{key["id"]}" selected>' in by_key.text

    first = await browser.get("/app/logs", params={"limit": 3, "key": key["id"]})
    older = re.search(r'href="([^"]+)" data-test="logs-older"', first.text)
    assert ROW.findall(first.text) == ids[:0:-1] and older is not None
    second = await browser.get(older.group(1).replace("&amp;", "&"))
    assert ROW.findall(second.text) == [ids[0]] and 'data-test="logs-older"' not in second.text
    assert 'data-test="logs-newest"' in second.text
    assert_clean(second)

    # The form's datetime-local fields are minutes in UTC; Older keeps the range.
    now = datetime.fromtimestamp(dash.clock.now(), UTC)
    window = {**EMPTY_FORM, "since": (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"), "limit": "2"}
    ranged = await browser.get(
        "/app/logs", params={**window, "until": (now + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")}
    )
    assert ranged.status_code == 200 and ROW.findall(ranged.text) == ids[:1:-1]
    assert f'value="{window["since"]}" data-test="logs-since"' in ranged.text
    older = re.search(r'href="([^"]+)" data-test="logs-older"', ranged.text)
    assert older is not None and "since=" in older.group(1)
    assert ROW.findall((await browser.get(older.group(1).replace("&amp;", "&"))).text) == ids[1::-1]
    later = await browser.get(
        "/app/logs", params={**EMPTY_FORM, "since": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")}
    )
    assert 'data-test="logs-empty"' in later.text

    empty = await browser.get("/app/logs", params={"status": "5xx"})
    assert empty.status_code == 200 and 'data-test="logs-empty"' in empty.text
    bad = await browser.get("/app/logs", params={"status": "3xx"})
    assert (
        bad.status_code == 400
        and bad.headers["content-type"].startswith("text/html")
        and "status" in bad.text
    )


async def test_the_detail_page_shows_every_field_and_the_bodies_a_key_keeps(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    program = await api(dash, person.email)
    body = {"name": "kept", "scopes": ["chat"], "log_bodies_days": 7}
    kept = (await program.post("/admin/api-keys", json=body)).json()
    plain = (await program.post("/admin/api-keys", json={"name": "plain", "scopes": ["chat"]})).json()
    with_body = await program.post(
        "/v1/chat/completions", json=chat_body("secret plan"), headers=key_headers(kept["key"])
    )
    without = await program.post("/v1/chat/completions", json=chat_body(), headers=key_headers(plain["key"]))

    page = await browser.get(f"/app/logs/{with_body.headers['x-request-id']}")
    assert page.status_code == 200
    assert_clean(page)
    assert 'data-test="log-body-request"' in page.text and "secret plan" in page.text
    assert 'data-test="log-body-response"' in page.text and kept["key"] not in page.text
    assert f'href="/app/logs?key={kept["id"]}"' in page.text and "Model served" in page.text
    other = await browser.get(f"/app/logs/{without.headers['x-request-id']}")
    assert 'data-test="log-no-body"' in other.text and "log-body-request" not in other.text

    chat = await post_form(browser, "/app/playground", "/app/playground", model=MODEL, message="Hello")
    trace_id = re.search(r"/app/playground/trace/(\w+)\"", chat.text).group(1)  # type: ignore[union-attr]
    played = await browser.get("/app/logs", params={"endpoint": "playground"})
    (request_id,) = ROW.findall(played.text)
    traced = await browser.get(f"/app/logs/{request_id}")
    assert f'href="/app/playground/trace/{trace_id}" data-test="log-trace-link"' in traced.text

    missing = await browser.get("/app/logs/no-such-request")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    stranger = await dash.signed_in(await dash.person(), ip="10.0.0.2")
    assert (await stranger.get(f"/app/logs/{with_body.headers['x-request-id']}")).status_code == 404
    assert ROW.findall((await stranger.get("/app/logs")).text) == []
    signed_out = await dash.browser("10.0.0.3").get("/app/logs")
    assert signed_out.status_code == 303 and signed_out.headers["location"].startswith("/app/login")
