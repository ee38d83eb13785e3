"""An OAuth access token with ``commerce:checkout`` buys through the five ACP tools on /api/mcp.php
(the official ``mcp`` SDK, the token obtained through the consent page as tests/agent_auth does): the
orders are its organisation's, placed as that organisation's own platform (no webhook), which the
platform administrator sees and may revoke. Without the scope the call is the 403
``insufficient_scope`` step-up; without a token the tools still take a platform's credential."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agent_server.commerce.platforms import COMMERCE_SCOPE, organisation_platform_id
from agent_server.foundation.settings import Settings
from agent_server.oauth.vocabulary import SCOPES
from tests.agent_auth.oauth_world import REDIRECT, TOKEN_URL, authorization, consent, oauth_client, register
from tests.commerce.conftest import TRAINING, VERSION, assert_valid, payment
from tests.conftest import BASE_URL
from tests.mcp.support import rpc
from tests.pages.dashboard import Dash, Person, dashboard_world

ADDRESS = {
    "name": "Ada Buyer",
    "line_one": "Invalidenstrasse 1",
    "city": "Berlin",
    "state": "BE",
    "country": "DE",
    "postal_code": "10115",
}


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def token_for(dash: Dash, scope: str) -> tuple[str, Person]:
    """A person of a new organisation consents on the page; the client's access token."""
    person = await dash.person("starter")
    browser = await dash.signed_in(person)
    client = oauth_client(dash, (await register(dash, scope=scope)).json()["client_id"], scope=scope)
    asked = authorization(client)
    decided = await consent(browser, asked.url)
    token = await client.fetch_token(
        TOKEN_URL, authorization_response=decided.headers["location"], code_verifier=asked.verifier
    )
    assert token["scope"] == scope
    return token["access_token"], person


@asynccontextmanager
async def mcp_with(dash: Dash, token: str) -> AsyncIterator[ClientSession]:
    http = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(dash.app), headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    async with (
        http,
        Client(streamable_http_client(f"{BASE_URL}/api/mcp.php", http_client=http), mode="legacy") as client,
    ):
        yield client.session


def meta() -> dict[str, str]:
    return {"api_version": VERSION, "idempotency_key": str(uuid.uuid4())}


async def test_a_commerce_token_buys_for_its_organisation_through_the_five_tools(dash: Dash) -> None:
    token, person = await token_for(dash, COMMERCE_SCOPE)
    async with mcp_with(dash, token) as mcp:
        created = await mcp.call_tool(
            "create_checkout_session",
            {
                "meta": meta(),
                "payload": {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}},
            },
        )
        assert created.is_error is False, created.content
        session = created.structured_content
        assert_valid("CheckoutSession", session)
        details = {"name": "Ada Buyer", "email": "ada@example.com", "address": ADDRESS}
        updated = await mcp.call_tool(
            "update_checkout_session",
            {"meta": meta(), "id": session["id"], "payload": {"fulfillment_details": details}},
        )
        assert updated.structured_content["status"] == "ready_for_payment"
        done = await mcp.call_tool(
            "complete_checkout_session", {"meta": meta(), "id": session["id"], "payload": payment()}
        )
        assert done.is_error is False, done.content
        assert_valid("CheckoutSessionWithOrder", done.structured_content)
        order = done.structured_content["order"]
        got = await mcp.call_tool(
            "get_checkout_session", {"meta": {"api_version": VERSION}, "id": session["id"]}
        )
        assert got.structured_content["status"] == "completed" and got.structured_content["order"] == order
        with pytest.raises(MCPError) as refused:  # the spec's errors, as for a platform
            await mcp.call_tool("cancel_checkout_session", {"meta": meta(), "id": session["id"]})
        assert refused.value.code == -32000 and refused.value.data["code"] == "checkout_session_completed"
        assert_valid("Error", refused.value.data)

    # The order is the organisation's: placed as its own platform, without order events.
    commerce = dash.app.state.commerce
    platform = await commerce.platforms.get(organisation_platform_id(person.tenant_id))
    assert platform.webhook_url is None and person.tenant_id in platform.name
    assert (await commerce.orders.get(order["id"])).platform_id == platform.id

    # Another organisation's token does not see it, and buys as a platform of its own.
    other, other_person = await token_for(dash, f"usage:read {COMMERCE_SCOPE}")
    async with mcp_with(dash, other) as mcp:
        with pytest.raises(MCPError) as hidden:
            await mcp.call_tool(
                "get_checkout_session", {"meta": {"api_version": VERSION}, "id": session["id"]}
            )
        assert hidden.value.data["code"] == "session_not_found"
        theirs = await mcp.call_tool(
            "create_checkout_session",
            {
                "meta": meta(),
                "payload": {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}},
            },
        )
        assert theirs.is_error is False, theirs.content
    own = [p.id for p in await commerce.platforms.list() if p.id.startswith("plat_org_")]
    assert sorted(own) == sorted(organisation_platform_id(p.tenant_id) for p in (person, other_person))

    # The platform administrator sees the order under the organisation's platform, and may stop it.
    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    page = await admin.get("/app/agent-commerce")
    row = page.text.split(f'data-order-id="{order["id"]}"', 1)[1].split("</tr>", 1)[0]
    assert platform.name in row
    await commerce.platforms.revoke(platform.id)
    async with mcp_with(dash, token) as mcp:
        with pytest.raises(MCPError) as stopped:
            await mcp.call_tool(
                "get_checkout_session", {"meta": {"api_version": VERSION}, "id": session["id"]}
            )
        assert stopped.value.data["code"] == "invalid_credential"
        assert_valid("Error", stopped.value.data)


async def test_without_the_scope_a_token_is_asked_to_step_up(dash: Dash) -> None:
    token, _ = await token_for(dash, "usage:read")
    create = {
        "name": "create_checkout_session",
        "arguments": {
            "meta": meta(),
            "payload": {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}},
        },
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as http:
        refused = await rpc(http, "tools/call", create, Authorization=f"Bearer {token}")
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and f'scope="{COMMERCE_SCOPE}"' in challenge
        # Without a token the tools take an agent platform's credential: no OAuth challenge.
        anonymous = await rpc(http, "tools/call", create)
        assert anonymous.status_code == 200
        error = anonymous.json()["error"]
        assert error["code"] == -32000 and error["data"]["code"] == "missing_credential"
        made = await dash.app.state.commerce.platforms.create("Credentialed assistant", None)
        bought = await rpc(http, "tools/call", create, Authorization=f"Bearer {made.credential}")
        assert bought.status_code == 200 and bought.json()["result"]["isError"] is False
    assert not [p for p in await dash.app.state.commerce.platforms.list() if p.id.startswith("plat_org_")]


async def test_the_scope_is_published_and_explained_on_the_consent_page(dash: Dash) -> None:
    assert COMMERCE_SCOPE in SCOPES
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as http:
        for path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource"):
            document = (await http.get(path)).json()
            assert COMMERCE_SCOPE in document["scopes_supported"], path
        # A client that names no scope does not get it: buying is asked for by name only.
        bare = {
            "client_name": "Bare agent",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
        }
        registered = await http.post("/oauth/register", json=bare)
        assert registered.status_code == 201, registered.text
        unnamed = registered.json()["scope"].split()
        assert COMMERCE_SCOPE not in unnamed and {"chat", "usage:read"} <= set(unnamed)
    browser = await dash.signed_in(await dash.person("starter"))
    client = oauth_client(
        dash, (await register(dash, scope=COMMERCE_SCOPE)).json()["client_id"], scope=COMMERCE_SCOPE
    )
    asked = await browser.get(authorization(client).url.removeprefix(BASE_URL))
    shown = await browser.get(asked.headers["location"])
    assert shown.status_code == 200 and "buy from the catalogue on your behalf" in shown.text
