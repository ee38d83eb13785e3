"""Anonymous tool calls (MCP and /api/tools/call) spend the site's model budget, like /api/ask.php."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.site.conftest import assert_envelope

LLM_QUESTION = {"name": "ask_agentgate", "arguments": {"query": "Write a limerick about a lighthouse keeper"}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture
def configure() -> dict[str, Any]:
    return {"site_llm_requests_per_minute": 1}


async def test_direct_tool_calls_share_the_site_budget(web: httpx.AsyncClient) -> None:
    first = await web.post("/api/tools/call", json=LLM_QUESTION)
    assert first.status_code == 200, first.text
    assert first.json()["result"]["route"] == "llm"
    second = await web.post("/api/tools/call", json=LLM_QUESTION)
    assert_envelope(second, 503, "SITE_BUDGET_EXHAUSTED")


async def test_mcp_tool_calls_share_the_site_budget(web: httpx.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": LLM_QUESTION}
    first = (await web.post("/api/mcp.php", json=body, headers=MCP_HEADERS)).json()["result"]
    assert first["isError"] is False and first["structuredContent"]["route"] == "llm"
    second = (await web.post("/api/mcp.php", json=body, headers=MCP_HEADERS)).json()["result"]
    assert second["isError"] is True
    assert "SITE_BUDGET_EXHAUSTED" in second["content"][0]["text"]


async def test_faq_answers_still_work_when_the_budget_is_spent(web: httpx.AsyncClient) -> None:
    await web.post("/api/tools/call", json=LLM_QUESTION)
    faq = {"name": "ask_agentgate", "arguments": {"query": "How do I rotate my API key?"}}
    answer = await web.post("/api/tools/call", json=faq)
    assert answer.status_code == 200 and answer.json()["result"]["route"] == "faq"
