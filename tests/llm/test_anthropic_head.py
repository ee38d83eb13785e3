"""The request head of an Anthropic-compatible upstream, on our pooled transport and on httpx's: the
upstream's key, and the client's ``anthropic-beta`` and ``anthropic-version`` of that call only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_server.llm.anthropic_native import AnthropicBackend
from agent_server.llm.anthropic_translate import MESSAGES
from agent_server.llm.types import Call
from tests.gateway.anthropic_upstream import UPSTREAM_MODEL, AnthropicUpstream
from tests.llm.conftest import UPSTREAM_KEY, config

BODY = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture(scope="module")
def upstream() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream() as server:
        yield server


@pytest.mark.parametrize("kind", ["pooled", "httpx"])
async def test_each_call_carries_its_own_anthropic_headers(upstream: AnthropicUpstream, kind: str) -> None:
    settings = config(upstream.base_url, "claude", models={"claude": UPSTREAM_MODEL}, dialect="anthropic")
    backend = AnthropicBackend(settings, transport_kind=kind)
    try:
        passed = ((b"anthropic-beta", b"files-api-2025-04-14,mcp-client-2025-04-04"),)
        await backend.relay(Call(MESSAGES, "claude", BODY, upstream_headers=passed))
        head = upstream.last[0]
        assert head["anthropic-beta"] == "files-api-2025-04-14,mcp-client-2025-04-04"
        assert head["anthropic-version"] == "2023-06-01" and head["x-api-key"] == UPSTREAM_KEY

        versioned = ((b"anthropic-version", b"2026-10-21"),)
        await backend.relay(Call(MESSAGES, "claude", BODY, upstream_headers=versioned))
        head = upstream.last[0]
        assert head["anthropic-version"] == "2026-10-21" and "anthropic-beta" not in head
        assert [name for name, _ in upstream.heads[-1]].count(b"anthropic-version") == 1
    finally:
        await backend.aclose()
