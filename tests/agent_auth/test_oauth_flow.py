"""The OAuth 2.1 authorization server, driven by authlib's OAuth 2 client: dynamic registration,
the consent page as a signed-in person, PKCE S256, tokens the ``openai`` SDK uses on ``/v1``, refresh
rotation and revocation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import openai
import pytest
from authlib.integrations.base_client import OAuthError

from agent_server.foundation.settings import Settings
from tests.agent_auth.conftest import sdk
from tests.agent_auth.oauth_world import (
    REDIRECT,
    TOKEN_URL,
    authorization,
    consent,
    oauth_client,
    register,
)
from tests.conftest import BASE_URL
from tests.pages.dashboard import Dash, dashboard_world

MESSAGES = [{"role": "user", "content": "Hello from an OAuth client"}]


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def signed_in_code(dash: Dash) -> tuple[str, object, object]:
    person = await dash.person("starter")
    browser = await dash.signed_in(person)
    client_id = (await register(dash)).json()["client_id"]
    client = oauth_client(dash, client_id)
    asked = authorization(client)
    decided = await consent(browser, asked.url)
    assert decided.status_code == 303 and decided.headers["location"].startswith(REDIRECT), decided.text[:500]
    return decided.headers["location"], client, asked


async def test_a_registered_client_gets_tokens_the_openai_sdk_uses(dash: Dash) -> None:
    location, client, asked = await signed_in_code(dash)
    token = await client.fetch_token(
        TOKEN_URL, authorization_response=location, code_verifier=asked.verifier, resource=BASE_URL
    )
    assert (
        token["token_type"].lower() == "bearer"
        and token["expires_in"] == 900
        and token["scope"] == "chat models"
    )
    async with sdk(dash, token["access_token"]) as openai_client:
        reply = await openai_client.chat.completions.create(model="agentgate-mock-small", messages=MESSAGES)
        assert "OAuth client" in (reply.choices[0].message.content or "")
    refreshed = await client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])
    assert refreshed["refresh_token"] != token["refresh_token"]
    async with sdk(dash, refreshed["access_token"]) as openai_client:
        assert (await openai_client.models.list()).data
    with pytest.raises(OAuthError) as reused:  # the old refresh token again: the family is revoked
        await client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])
    assert reused.value.error == "invalid_grant"
    dash.clock.advance(2)  # past the token cache of this process
    async with sdk(dash, refreshed["access_token"]) as openai_client:
        with pytest.raises(openai.AuthenticationError):
            await openai_client.models.list()


async def test_a_confidential_client_introspects_its_own_tokens(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person("starter"))
    registered = (await register(dash, token_endpoint_auth_method="client_secret_basic")).json()
    other = (await register(dash, token_endpoint_auth_method="client_secret_post")).json()
    secret = registered["client_secret"]
    client = oauth_client(dash, registered["client_id"], client_secret=secret)
    client.token_endpoint_auth_method = "client_secret_basic"
    asked = authorization(client)
    decided = await consent(browser, asked.url)
    token = await client.fetch_token(
        TOKEN_URL, authorization_response=decided.headers["location"], code_verifier=asked.verifier
    )

    async def introspect(value: str, auth: tuple[str, str] | None, **form: str) -> dict[str, object]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as c:
            answer = await c.post("/oauth/introspect", data={"token": value, **form}, auth=auth)
        return answer.json()

    mine = (registered["client_id"], secret)
    seen = await introspect(token["access_token"], mine)
    assert seen["active"] is True and seen["scope"] == "chat models" and seen["aud"] == BASE_URL
    assert (await introspect(token["refresh_token"], mine))["active"] is True
    theirs = await introspect(
        token["access_token"], None, client_id=other["client_id"], client_secret=other["client_secret"]
    )
    assert theirs == {"active": False}  # another client learns nothing
    public = await introspect(token["access_token"], None, client_id=registered["client_id"])
    assert public["error"] == "invalid_client"
    await client.revoke_token(f"{BASE_URL}/oauth/revoke", token["access_token"])
    assert (await introspect(token["access_token"], mine)) == {"active": False}


async def test_the_flow_on_postgresql(settings: Settings, postgres_url: str) -> None:
    async with dashboard_world(settings, database_url=postgres_url) as dash:
        location, client, asked = await signed_in_code(dash)
        token = await client.fetch_token(
            TOKEN_URL, authorization_response=location, code_verifier=asked.verifier
        )  # type: ignore[attr-defined]
        refreshed = await client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])  # type: ignore[attr-defined]
        async with sdk(dash, refreshed["access_token"]) as openai_client:
            assert (await openai_client.models.list()).data
        with pytest.raises(OAuthError):
            await client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])  # type: ignore[attr-defined]
        dash.clock.advance(2)
        async with sdk(dash, refreshed["access_token"]) as openai_client:
            with pytest.raises(openai.AuthenticationError):
                await openai_client.models.list()
