"""The MCP endpoint and OAuth access tokens: anonymous callers see the public tools only, and calling a
tenant tool without a token is a 401 naming the scope (what starts a client's OAuth flow); with a
token the caller sees and uses the tenant tools its scopes allow, for its organisation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.settings import Settings
from tests.agent_auth.oauth_world import TOKEN_URL, authorization, consent, oauth_client, register
from tests.conftest import BASE_URL
from tests.mcp.support import rpc
from tests.pages.dashboard import Dash, dashboard_world

TENANT_TOOLS = {"get_usage_this_month", "list_api_keys", "create_api_key", "get_recent_requests"}


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def access_token(dash: Dash, scope: str) -> str:
    browser = await dash.signed_in(await dash.person("starter"))
    client = oauth_client(dash, (await register(dash, scope=scope)).json()["client_id"], scope=scope)
    asked = authorization(client)
    decided = await consent(browser, asked.url)
    token = await client.fetch_token(
        TOKEN_URL, authorization_response=decided.headers["location"], code_verifier=asked.verifier
    )
    return token["access_token"]


def names(answer: httpx.Response) -> set[str]:
    assert answer.status_code == 200, answer.text
    return {t["name"] for t in answer.json()["result"]["tools"]}


async def test_anonymous_callers_see_public_tools_and_are_asked_to_sign_in_for_tenant_tools(
    dash: Dash,
) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as mcp:
        assert not names(await rpc(mcp, "tools/list")) & TENANT_TOOLS
        refused = await rpc(mcp, "tools/call", {"name": "get_usage_this_month", "arguments": {}})
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource"' in challenge
        assert 'scope="usage:read"' in challenge
        bad = await rpc(mcp, "tools/list", Authorization="Bearer oat_not-a-token")
        assert bad.status_code == 401 and "resource_metadata" in bad.headers["www-authenticate"]


async def test_a_token_sees_and_uses_the_tenant_tools_its_scopes_allow(dash: Dash) -> None:
    token = await access_token(dash, "chat models usage:read keys:read keys:write")
    bearer = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as mcp:
        listed = names(await rpc(mcp, "tools/list", **bearer))
        assert {"get_usage_this_month", "list_api_keys", "create_api_key"} <= listed
        assert "get_recent_requests" not in listed  # no logs:read
        usage = await rpc(mcp, "tools/call", {"name": "get_usage_this_month", "arguments": {}}, **bearer)
        report = usage.json()["result"]["structuredContent"]["report"]
        assert report["plan"]["id"] == "starter"
        made = await rpc(
            mcp,
            "tools/call",
            {"name": "create_api_key", "arguments": {"name": "from mcp", "scopes": ["chat"]}},
            **bearer,
        )
        created = made.json()["result"]["structuredContent"]
        assert created["key"].startswith("sk_") and created["scopes"] == ["chat"]
        keys = await rpc(mcp, "tools/call", {"name": "list_api_keys", "arguments": {}}, **bearer)
        assert [k["name"] for k in keys.json()["result"]["structuredContent"]["keys"]] == ["from mcp"]
        too_much = await rpc(
            mcp,
            "tools/call",
            {"name": "create_api_key", "arguments": {"name": "x", "scopes": ["embeddings"]}},
            **bearer,
        )
        assert too_much.json()["result"]["isError"] is True
        logs = await rpc(mcp, "tools/call", {"name": "get_recent_requests", "arguments": {}}, **bearer)
        assert logs.json()["result"]["isError"] is True  # the scope is checked on the call too
