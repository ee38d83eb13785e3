"""Attacks on the authorization server, each refused: a code used twice, a code without or with a
wrong verifier, a ``plain`` challenge, an unregistered redirect URI, a token for another resource,
clients registering what they may not; and a person's denial, a remembered consent and revocation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from authlib.integrations.base_client import OAuthError
from sqlalchemy import update

from agent_server.foundation.settings import Settings
from agent_server.gateway.tables import User
from tests.agent_auth.conftest import sdk
from tests.agent_auth.oauth_world import (
    REDIRECT,
    TOKEN_URL,
    authorization,
    consent,
    oauth_client,
    query_of,
    register,
)
from tests.conftest import BASE_URL
from tests.gateway.conftest import PASSWORD
from tests.pages.dashboard import Dash, dashboard_world, post_form


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


class Party:
    """A signed-in person and a registered public client."""

    def __init__(self, dash: Dash, browser: httpx.AsyncClient, client_id: str) -> None:
        self.dash, self.browser, self.client_id = dash, browser, client_id
        self.client = oauth_client(dash, client_id)

    async def code(self, **params: Any) -> tuple[str, str]:
        asked = authorization(self.client, **params)
        decided = await consent(self.browser, asked.url)
        assert decided.status_code == 303, decided.text[:300]
        return decided.headers["location"], asked.verifier

    async def token_answer(self, **form: str) -> httpx.Response:
        body = {
            "grant_type": "authorization_code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT,
            **form,
        }
        async with httpx.AsyncClient(transport=httpx.ASGITransport(self.dash.app), base_url=BASE_URL) as c:
            return await c.post("/oauth/token", data=body)


@pytest.fixture
async def party(dash: Dash) -> Party:
    browser = await dash.signed_in(await dash.person("starter"))
    return Party(dash, browser, (await register(dash)).json()["client_id"])


async def test_a_code_works_once_and_its_reuse_revokes_what_it_gave(party: Party) -> None:
    location, verifier = await party.code()
    code = query_of(location)["code"]
    first = await party.token_answer(code=code, code_verifier=verifier)
    assert first.status_code == 200, first.text
    again = await party.token_answer(code=code, code_verifier=verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    party.dash.clock.advance(2)
    async with sdk(party.dash, first.json()["access_token"]) as client:  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()


async def test_pkce_is_required_with_s256_only(party: Party) -> None:
    location, verifier = await party.code()
    missing = await party.token_answer(code=query_of(location)["code"])
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    location, verifier = await party.code()
    wrong = await party.token_answer(code=query_of(location)["code"], code_verifier="w" * 43 + verifier[:2])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    for params in (
        {"code_challenge_method": "plain", "code_challenge": "p" * 43},
        {"code_challenge": "p" * 43},
    ):
        query = {
            "response_type": "code",
            "client_id": party.client_id,
            "redirect_uri": REDIRECT,
            "state": "s",
            **params,
        }
        answer = await party.browser.get("/oauth/authorize", params=query)
        assert answer.status_code == 302, answer.text
        assert query_of(answer.headers["location"])["error"] == "invalid_request"
    bare = {"response_type": "code", "client_id": party.client_id, "redirect_uri": REDIRECT}
    assert query_of((await party.browser.get("/oauth/authorize", params=bare)).headers["location"])[
        "error"
    ] == ("invalid_request")


async def test_an_unregistered_redirect_uri_is_never_followed(party: Party) -> None:
    asked = authorization(party.client, redirect_uri="http://127.0.0.1:9/elsewhere")
    answer = await party.browser.get(asked.url.removeprefix(BASE_URL))
    assert answer.status_code == 400 and "location" not in answer.headers
    assert answer.json()["error"] == "invalid_request"
    page = await party.browser.get("/app/oauth/consent?" + asked.url.split("?", 1)[1])
    assert page.status_code == 400 and "oauth-refused" in page.text and "location" not in page.headers


async def test_tokens_are_only_for_this_resource(party: Party) -> None:
    asked = authorization(party.client)
    other = asked.url.replace("resource=http", "resource=https%3A%2F%2Fother.example%2F&x=http")
    refused = await party.browser.get(other.removeprefix(BASE_URL))
    assert refused.status_code == 302 and query_of(refused.headers["location"])["error"] == "invalid_target"
    location, verifier = await party.code()
    switched = await party.token_answer(
        code=query_of(location)["code"], code_verifier=verifier, resource="https://other.example"
    )
    assert switched.status_code == 400 and switched.json()["error"] == "invalid_target"


async def test_registration_refuses_what_a_client_may_not_declare(dash: Dash) -> None:
    for metadata in (
        {"redirect_uris": ["http://agent.example/callback"]},  # http off loopback
        {"redirect_uris": ["https://agent.example/cb#frag"]},
        {"redirect_uris": ["https://[agent.example/cb"]},  # urllib cannot split it: refused, not a 500
        {"redirect_uris": ["https://agent.example:70000/cb"]},  # no such port
        {"redirect_uris": [f"https://agent.example/{n}" for n in range(6)]},
        {"token_endpoint_auth_method": "private_key_jwt"},
        {"grant_types": ["client_credentials"]},
        {"response_types": ["token"]},
        {"scope": "chat admin"},  # never admin
        {"scope": 5},  # values of the wrong type are refused, not a server error
        {"client_name": ["x"]},
        {"grant_types": "authorization_code"},
    ):
        answer = await register(dash, **metadata)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_client_metadata", metadata
    narrowed = await register(dash, scope="chat")
    assert narrowed.status_code == 201 and narrowed.json()["scope"] == "chat"
    confidential = await register(dash, token_endpoint_auth_method="client_secret_basic")
    assert confidential.status_code == 201 and confidential.json()["client_secret"]


async def test_a_denial_a_remembered_consent_and_revocation(party: Party) -> None:
    denied = await consent(party.browser, authorization(party.client).url, decision="deny")
    assert denied.status_code == 303 and query_of(denied.headers["location"])["error"] == "access_denied"
    location, verifier = await party.code()  # approved: remembered
    again = authorization(party.client)
    straight = await consent(party.browser, again.url)
    assert straight.status_code == 303 and "code" in query_of(straight.headers["location"])
    token = await party.client.fetch_token(TOKEN_URL, authorization_response=location, code_verifier=verifier)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(party.dash.app), base_url=BASE_URL) as c:
        revoked = await c.post(
            "/oauth/revoke", data={"token": token["access_token"], "client_id": party.client_id}
        )
    assert revoked.status_code == 200
    party.dash.clock.advance(2)
    async with sdk(party.dash, token["access_token"]) as client:  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()
    with pytest.raises(OAuthError):  # its refresh token went with it
        await party.client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])


async def test_a_person_who_may_no_longer_use_the_gateway_ends_their_apps_access(party: Party) -> None:
    location, verifier = await party.code()
    token = await party.client.fetch_token(TOKEN_URL, authorization_response=location, code_verifier=verifier)
    async with sdk(party.dash, token["access_token"]) as client:  # type: ignore[arg-type]
        assert (await client.models.list()).data
        async with party.dash.app.state.services.db.session() as session:
            await session.execute(update(User).values(role="viewer"))  # the only person of this world
        party.dash.clock.advance(2)
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()
    # The remembered consent no longer counts: the page is shown again, and a viewer may not allow.
    again = await consent(party.browser, authorization(party.client).url)
    assert again.status_code == 403 and "role_not_allowed" in again.text


async def test_connected_apps_lists_and_disconnects_at_once(party: Party) -> None:
    location, verifier = await party.code()
    token = await party.client.fetch_token(TOKEN_URL, authorization_response=location, code_verifier=verifier)
    jwt = party.browser.cookies["agentgate_session"]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(party.dash.app), base_url=BASE_URL) as api:
        listed = (await api.get("/admin/oauth/apps", headers={"Authorization": f"Bearer {jwt}"})).json()[
            "data"
        ]
    assert [(a["client_id"], a["client_name"], a["scopes"]) for a in listed] == [
        (party.client_id, "Test agent", ["chat", "models"])
    ]
    shown = await party.browser.get("/app/connected-apps")
    assert shown.status_code == 200 and f"disconnect-{party.client_id}" in shown.text
    async with sdk(party.dash, token["access_token"]) as client:  # type: ignore[arg-type]
        assert (await client.models.list()).data
        gone = await post_form(
            party.browser, "/app/connected-apps", "/app/connected-apps/disconnect", client_id=party.client_id
        )
        assert gone.status_code == 303
        with pytest.raises(openai.AuthenticationError):  # at once, without waiting for a cache
            await client.models.list()
    assert "no-connected-apps" in (await party.browser.get("/app/connected-apps")).text
    with pytest.raises(OAuthError):
        await party.client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])
    asked = await consent(party.browser, authorization(party.client).url, decision="deny")
    assert query_of(asked.headers["location"])["error"] == "access_denied"  # asked again, not remembered


async def test_without_a_scope_the_client_gets_what_the_consent_page_showed(party: Party) -> None:
    location, verifier = await party.code(scope="")
    token = await party.client.fetch_token(TOKEN_URL, authorization_response=location, code_verifier=verifier)
    assert token["scope"] == "chat models"  # the client's registered scopes, as the page listed them


async def test_a_person_not_signed_in_signs_in_first_and_comes_back_to_the_consent(dash: Dash) -> None:
    person = await dash.person("starter")
    client = oauth_client(dash, (await register(dash)).json()["client_id"])
    asked = authorization(client)
    browser = dash.browser()
    to_consent = await browser.get(asked.url.removeprefix(BASE_URL))
    to_login = await browser.get(to_consent.headers["location"])
    assert to_login.status_code == 303 and to_login.headers["location"].startswith("/app/login?next=")
    login_page = to_login.headers["location"]
    signed = await post_form(
        browser,
        login_page,
        "/app/login",
        email=person.email,
        password=PASSWORD,
        next=query_of(login_page)["next"],
    )
    assert signed.status_code == 303 and signed.headers["location"] == to_consent.headers["location"]
    shown = await browser.get(signed.headers["location"])
    assert shown.status_code == 200 and "consent-form" in shown.text
