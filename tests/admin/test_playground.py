"""Playground chats are traced (backend, attempts, latency, tokens, errors); realtime counts them."""

from __future__ import annotations

import json

from tests.admin.conftest import World
from tests.admin.test_routing import PATH, Flaky

CHAT = {"model": "agentgate-mock-small", "messages": [{"role": "user", "content": "What is the plan?"}]}


async def test_a_chat_records_a_trace_with_every_step(world: World) -> None:
    auth = world.auth("a_admin")
    response = await world.client.post("/admin/playground/chat", json=CHAT, headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["completion"]["object"] == "chat.completion"
    assert "What is the plan?" in body["completion"]["choices"][0]["message"]["content"]
    trace_id = body["trace_id"]

    trace = (await world.client.get(f"/admin/playground/trace/{trace_id}", headers=auth)).json()
    assert trace["backend"] == "mock" and trace["status"] == "ok" and trace["attempts"] == 1
    assert trace["usage"]["total_tokens"] == body["completion"]["usage"]["total_tokens"] > 0
    assert [s["kind"] for s in trace["steps"]] == ["request", "route", "attempt", "result"]
    assert trace["steps"][1]["order"] == ["mock"] and trace["steps"][1]["revision"] >= 1
    assert "What is the plan?" not in json.dumps(trace)  # traces keep sizes, not conversations

    listed = (await world.client.get("/admin/playground/traces", headers=auth)).json()
    assert listed["total"] == 1 and listed["data"][0]["id"] == trace_id and "steps" not in listed["data"][0]
    live = (await world.client.get(f"/admin/realtime/trace/{trace_id}", headers=auth)).json()
    assert live["id"] == trace_id and live["complete"] is True


async def test_the_trace_streams_as_server_sent_events(world: World) -> None:
    auth = world.auth("a_admin")
    trace_id = (await world.client.post("/admin/playground/chat", json=CHAT, headers=auth)).json()["trace_id"]
    async with world.client.stream(
        "GET", f"/admin/playground/trace/{trace_id}/stream", headers=auth
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "text/event-stream"
        )
        text = "".join([chunk async for chunk in response.aiter_text()])
    events = [line.removeprefix("event: ").strip() for line in text.splitlines() if line.startswith("event:")]
    assert events == ["step", "step", "step", "step", "end"]
    data = [json.loads(line.removeprefix("data: ")) for line in text.splitlines() if line.startswith("data:")]
    assert data[-1]["id"] == trace_id and data[2]["kind"] == "attempt"


async def test_fallback_and_failure_are_traced(world: World) -> None:
    router = world.app.state.services.llm
    router.backends["flaky"] = Flaky()
    platform = world.auth("platform")
    etag = (await world.client.get(PATH, headers=platform)).headers["etag"]
    routes = {
        "agentgate-mock-small": [{"backend": "flaky", "priority": 0}, {"backend": "mock", "priority": 1}],
        "agentgate-mock-large": [{"backend": "flaky"}],
    }
    assert (
        await world.client.patch(PATH, json={"routes": routes}, headers={**platform, "If-Match": etag})
    ).status_code == 200

    auth = world.auth("a_admin")
    ok = (await world.client.post("/admin/playground/chat", json=CHAT, headers=auth)).json()
    trace = (await world.client.get(f"/admin/playground/trace/{ok['trace_id']}", headers=auth)).json()
    attempts = [s for s in trace["steps"] if s["kind"] == "attempt"]
    assert [(a["backend"], a["ok"]) for a in attempts] == [("flaky", False), ("mock", True)]
    assert attempts[0]["error"] == "upstream_error" and trace["backend"] == "mock" and trace["attempts"] == 2

    failed = await world.client.post(
        "/admin/playground/chat", json={**CHAT, "model": "agentgate-mock-large"}, headers=auth
    )
    assert failed.status_code == 502 and failed.json()["error"]["code"] == "upstream_error"
    trace = (
        await world.client.get(f"/admin/playground/trace/{failed.json()['error']['trace_id']}", headers=auth)
    ).json()
    assert (
        trace["status"] == "error"
        and trace["error"].startswith("upstream_error")
        and trace["steps"][-1]["kind"] == "error"
    )


async def test_models_outside_the_plan_are_refused(world: World) -> None:
    response = await world.client.post(
        "/admin/playground/chat", json={**CHAT, "model": "claude-sonnet-4"}, headers=world.auth("a_admin")
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "model_not_found"


async def test_realtime_counts_requests_errors_and_tokens_per_model(world: World) -> None:
    auth = world.auth("a_admin")
    for _ in range(2):
        await world.client.post("/admin/playground/chat", json=CHAT, headers=auth)
    await world.client.post(
        "/admin/playground/chat", json={**CHAT, "model": "agentgate-mock-large"}, headers=auth
    )
    live = (await world.client.get("/admin/realtime/", headers=auth)).json()
    by_model = {m["model"]: m for m in live["models"]}
    assert (
        by_model["agentgate-mock-small"]["requests"] == 2
        and by_model["agentgate-mock-large"]["requests"] == 1
    )
    assert live["totals"]["requests"] == 3 and live["totals"]["errors"] == 0
    assert live["totals"]["total_tokens"] == sum(m["total_tokens"] for m in live["models"]) > 0
    other = (await world.client.get("/admin/realtime/", headers=world.auth("b_admin"))).json()
    assert other["totals"]["requests"] == 0  # tenant B sees only its own traffic
    world.clock.advance(600)
    assert (await world.client.get("/admin/realtime/?window=300", headers=auth)).json()["totals"][
        "requests"
    ] == 0
