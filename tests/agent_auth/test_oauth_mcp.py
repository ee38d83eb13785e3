"""The MCP endpoint and OAuth access tokens: anonymous callers see the public tools only, and calling a
tenant tool without a token is a 401 naming the scope (what starts a client's OAuth flow); with a
token the caller sees and uses the tenant tools its scopes allow, for its organisation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from agent_server.foundation.settings import Settings
from tests.agent_auth.oauth_world import REDIRECT, ConsentingPerson, Memory, access_token, query_of
from tests.conftest import BASE_URL
from tests.mcp.support import rpc
from tests.pages.dashboard import Dash, dashboard_world, post_form

TENANT_TOOLS = {
    "get_usage_this_month",
    "list_api_keys",
    "create_api_key",
    "get_recent_requests",
    "call_model",
}


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


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
        assert logs.status_code == 403  # a step-up: the client may ask the person for logs:read
        challenge = logs.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="logs:read"' in challenge


async def test_the_mcp_sdk_oauth_client_connects_from_nothing(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person("starter"))
    person = ConsentingPerson(browser)
    landed = person.landed

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=f"{BASE_URL}/api/mcp.php",
        client_metadata=OAuthClientMetadata(
            client_name="SDK agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="usage:read keys:read",
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
    )
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(dash.app), auth=provider, timeout=30)
    async with (
        http,
        Client(streamable_http_client(f"{BASE_URL}/api/mcp.php", http_client=http), mode="legacy") as client,
    ):
        session = client.session
        # A 401 first: the flow runs (discovery, registration, PKCE, consent), then the call.
        usage = await session.call_tool("get_usage_this_month", {})
        assert not usage.is_error and usage.structured_content["report"]["plan"]["id"] == "starter"
        assert len(landed) == 1 and storage.tokens is not None and storage.client is not None
        assert storage.tokens.scope == "usage:read"  # what the 401 named
        listed = {tool.name for tool in (await session.list_tools()).tools}
        assert "get_usage_this_month" in listed and "list_api_keys" not in listed
        keys = await session.call_tool("list_api_keys", {})  # a 403 insufficient_scope: a step-up
        assert not keys.is_error and keys.structured_content["keys"] == []
        assert len(landed) == 2 and "keys:read" in (storage.tokens.scope or "").split()
        first = storage.tokens.refresh_token
        storage.tokens.expires_in = 0  # its access token at its end: the SDK refreshes on the next call
        provider.context.update_token_expiry(storage.tokens)
        assert not (await session.call_tool("get_usage_this_month", {})).is_error
        assert (
            storage.tokens.refresh_token != first and len(landed) == 2
        )  # refreshed, rotated, no new consent
        client_id = storage.client.client_id
        gone = await post_form(
            browser, "/app/connected-apps", "/app/connected-apps/disconnect", client_id=client_id
        )
        assert gone.status_code == 303  # the person disconnects the app: its tokens end at once
    # A new connection of the same client, its tokens now revoked: the SDK falls back to the whole flow,
    # and the person, asked again, says no. The transport's task ends with the client's refusal.
    person.decision = "deny"
    with pytest.raises(BaseExceptionGroup) as failed:
        async with (
            httpx2.AsyncClient(transport=httpx2.ASGITransport(dash.app), auth=provider, timeout=30) as again,
            Client(
                streamable_http_client(f"{BASE_URL}/api/mcp.php", http_client=again), mode="legacy"
            ) as client,
        ):
            await client.session.call_tool("get_usage_this_month", {})
    assert failed.group_contains(OAuthFlowError)
    assert len(landed) == 3 and query_of(landed[-1])["error"] == "access_denied"
