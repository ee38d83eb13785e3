"""The tenant tool ``call_model``: a model call through the gateway by an MCP client holding an OAuth
access token with the ``chat`` scope. It goes the way of ``/v1/chat/completions`` (the plan's models,
the upstream, the usage row with its cost), and its refusals are the gateway's codes as tool errors.
The client is the official ``mcp`` SDK; the upstream a real OpenAI-style server on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.knowledge.pack import shipped_content_dir
from tests.agent_auth.oauth_world import access_token
from tests.conftest import BASE_URL
from tests.llm.fake_upstream import FakeUpstream
from tests.mcp.support import rpc
from tests.pages.dashboard import Dash, dashboard_world

QUESTION = [{"role": "user", "content": "Say hello."}]
# The fake upstream reports 11 prompt and 5 completion tokens; gpt-4o-mini costs 15 and 60 cents per
# million tokens (models.yaml): 11 * 15 + 5 * 60 = 465 millionths of a cent.
LIVE_COST_MICROS = 465
LIVE_BASE = "https://127.0.0.1:8000"


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@asynccontextmanager
async def live_world(settings: Settings, upstream: FakeUpstream, **changes: Any) -> AsyncIterator[Dash]:
    routed = UpstreamConfig.model_validate(
        {"name": "up", "base_url": upstream.base_url, "models": {"gpt-4o-mini": "upstream-mini"}}
    )
    async with dashboard_world(
        settings,
        mode="production",  # live tokens: the upstream answers, the usage row has a cost
        public_base_url=LIVE_BASE,  # production cookies are Secure: an https address
        upstreams=[routed],
        **changes,
    ) as world:
        yield world


@pytest.fixture
async def dash(settings: Settings, upstream: FakeUpstream) -> AsyncIterator[Dash]:
    async with live_world(settings, upstream) as world:
        yield world


def sdk_http(dash: Dash, token: str) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(dash.app), headers=headers, timeout=30)


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    return json.loads(result.content[0].text)["error"]


async def test_a_token_with_chat_calls_a_model_billed_and_logged_like_v1(
    dash: Dash, upstream: FakeUpstream
) -> None:
    token = await access_token(dash, "chat usage:read logs:read")
    async with (
        sdk_http(dash, token) as http,
        Client(streamable_http_client(f"{LIVE_BASE}/api/mcp.php", http_client=http), mode="legacy") as client,
    ):
        session = client.session
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert "call_model" in listed and "max_tokens" in listed["call_model"].input_schema["properties"]
        answered = await session.call_tool(
            "call_model", {"model": "gpt-4o-mini", "messages": QUESTION, "max_tokens": 20}
        )
        assert not answered.is_error, answered.content
        out = answered.structured_content
        assert out["text"] == "Hello from the upstream!" and out["model"] == "gpt-4o-mini"
        assert out["usage"] == {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
        # The upstream got the request as /v1 would send it: its own model name, our messages.
        sent = upstream.requests[-1]
        assert sent["model"] == "upstream-mini" and sent["messages"] == QUESTION and sent["max_tokens"] == 20

        unknown = await session.call_tool("call_model", {"model": "no-such-model", "messages": QUESTION})
        assert error_of(unknown)["code"] == "MODEL_NOT_FOUND" and error_of(unknown)["param"] == "model"
        off_plan = await session.call_tool("call_model", {"model": "claude-sonnet-4", "messages": QUESTION})
        assert "not available on the Starter plan" in error_of(off_plan)["message"]
        assert len(upstream.requests) == 1  # refused before any upstream call

        await dash.app.state.gateway.usage.flush()
        logged = await session.call_tool("get_recent_requests", {"limit": 3})
        entries = logged.structured_content["requests"]
        assert [(e["model"], e["status"], e["error_code"]) for e in entries] == [
            ("claude-sonnet-4", 400, "model_not_found"),
            ("no-such-model", 400, "model_not_found"),
            ("gpt-4o-mini", 200, None),
        ]
        served = entries[-1]
        assert served["endpoint"] == "chat" and served["upstream"] == "up"
        assert served["cost_micros"] == LIVE_COST_MICROS and served["usage"]["total_tokens"] == 16
        usage = await session.call_tool("get_usage_this_month", {})
        report = usage.structured_content["report"]
        assert (report["requests"], report["errors"], report["total_tokens"]) == (3, 2, 16)
        assert report["cost_micros"] == LIVE_COST_MICROS and report["quota"]["used"] == 16


async def test_without_the_chat_scope_the_tool_is_hidden_and_asks_for_a_step_up(dash: Dash) -> None:
    token = await access_token(dash, "usage:read")
    bearer = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as mcp:
        listed = await rpc(mcp, "tools/list", **bearer)
        assert "call_model" not in {t["name"] for t in listed.json()["result"]["tools"]}
        call = {"name": "call_model", "arguments": {"model": "gpt-4o-mini", "messages": QUESTION}}
        refused = await rpc(mcp, "tools/call", call, **bearer)
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="chat"' in challenge
        anonymous = await rpc(mcp, "tools/call", call)
        assert anonymous.status_code == 401 and 'scope="chat"' in anonymous.headers["www-authenticate"]
        assert "call_model" not in {
            t["name"] for t in (await rpc(mcp, "tools/list")).json()["result"]["tools"]
        }


async def test_the_plans_monthly_token_quota_counts_and_refuses_the_tools_calls(
    settings: Settings, upstream: FakeUpstream, tmp_path: Path
) -> None:
    plans = yaml.safe_load((shipped_content_dir() / "plans.yaml").read_text())
    starter = next(plan for plan in plans["plans"] if plan["id"] == "starter")
    starter["monthly_token_quota"] = 20  # two answers of the fake upstream (16 tokens each) pass it
    content = tmp_path / "content"
    content.mkdir()
    (content / "plans.yaml").write_text(yaml.safe_dump(plans))
    async with live_world(settings, upstream, content_dir=content) as dash:
        token = await access_token(dash, "chat usage:read")
        gateway = dash.app.state.gateway
        ask = {"model": "gpt-4o-mini", "messages": QUESTION}
        async with (
            sdk_http(dash, token) as http,
            Client(
                streamable_http_client(f"{LIVE_BASE}/api/mcp.php", http_client=http), mode="legacy"
            ) as client,
        ):
            for _ in range(2):  # under the quota at each scan: served
                assert not (await client.session.call_tool("call_model", ask)).is_error
                await gateway.usage.flush()
                await gateway.quota.scan()
            over = error_of(await client.session.call_tool("call_model", ask))
            assert over["code"] == "QUOTA_EXCEEDED" and "20 tokens" in over["message"]
            usage = await client.session.call_tool("get_usage_this_month", {})
            assert usage.structured_content["report"]["quota"]["used"] == 32
        assert len(upstream.requests) == 2
