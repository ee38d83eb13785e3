"""The playground page: a chat as the organisation, its trace as a page and as a live event stream
under /app (the session cookie, not a bearer token); the audit log page and its plan feature."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest

from agent_server.foundation.settings import Settings
from tests.pages.dashboard import Dash, dashboard_world, post_form

MODEL = "agentgate-mock-small"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def events_of(text: str) -> list[tuple[str, dict]]:
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":")
        )
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


async def test_a_chat_shows_the_answer_and_streams_its_trace(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    page = await browser.get("/app/playground")
    assert f'<option value="{MODEL}"' in page.text
    answer = await post_form(browser, "/app/playground", "/app/playground", model=MODEL, system="Be brief.",
                             message="Hello there", max_tokens="64")  # fmt: skip
    assert answer.status_code == 200 and 'data-test="playground-answer"' in answer.text
    trace_id = re.search(r'data-stream="/app/playground/trace/(\w+)/stream"', answer.text).group(1)  # type: ignore[union-attr]
    stream = await browser.get(
        f"/app/playground/trace/{trace_id}/stream", headers={"Accept": "text/event-stream"}
    )
    assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-store"
    events = events_of(stream.text)
    kinds = [data["kind"] for event, data in events if event == "step"]
    assert kinds[0] == "request" and "attempt" in kinds and events[-1][0] == "end"
    assert events[-1][1]["id"] == trace_id and events[-1][1]["status"] == "ok"
    shown = await browser.get(f"/app/playground/trace/{trace_id}")
    assert shown.status_code == 200 and shown.text.count('<tr><th scope="row">') == len(kinds)
    token = browser.cookies["agentgate_session"]
    json_stream = await browser.get(f"/admin/playground/trace/{trace_id}/stream",
                                    headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert [e for e, _ in events_of(json_stream.text)] == [e for e, _ in events]  # the same events
    assert "Hello there" not in stream.text  # traces keep sizes, never the text


async def test_the_stream_needs_the_session_and_the_own_tenant(dash: Dash) -> None:
    owner = await dash.signed_in(await dash.person())
    answer = await post_form(owner, "/app/playground", "/app/playground", model=MODEL, message="Hi")
    trace_id = re.search(r"/app/playground/trace/(\w+)\"", answer.text).group(1)  # type: ignore[union-attr]
    assert (await dash.browser().get(f"/app/playground/trace/{trace_id}/stream")).status_code == 303
    stranger = await dash.signed_in(await dash.person())
    assert (await stranger.get(f"/app/playground/trace/{trace_id}/stream")).status_code == 404
    assert (await stranger.get(f"/app/playground/trace/{trace_id}")).status_code == 404


async def test_a_model_outside_the_plan_is_refused_on_the_page(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    refused = await post_form(
        browser, "/app/playground", "/app/playground", model="no-such-model", message="Hi"
    )
    assert refused.status_code == 400 and "model_not_found" in refused.text
    assert 'data-test="playground-message"' in refused.text and ">Hi</textarea>" in refused.text


async def test_the_audit_log_needs_its_plan_feature(dash: Dash) -> None:
    starter = await dash.signed_in(await dash.person(plan="starter"))
    refused = await starter.get("/app/audit")
    assert refused.status_code == 403 and "plan_limit_exceeded" in refused.text
    person = await dash.person()
    browser = await dash.signed_in(person)
    await post_form(browser, "/app/playground", "/app/playground", model=MODEL, message="Hi")
    page = await browser.get("/app/audit")
    assert page.status_code == 200 and "playground.chat" in page.text and "auth.login" in page.text
    only = await browser.get("/app/audit", params={"action": "playground.chat"})
    assert only.text.count('data-test="audit-row"') == 1
