"""The OAuth tests' world: the dashboard's (tests/pages/dashboard.py: people, signed-in browsers),
authlib's OAuth 2 client over the app's ASGI transport, and the consent page driven as a person."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import AsyncOAuth2Client
from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.conftest import BASE_URL
from tests.pages.dashboard import Dash, Person, csrf_of

REDIRECT = "http://127.0.0.1:9/callback"
TOKEN_URL, AUTHORIZE_URL = f"{BASE_URL}/oauth/token", f"{BASE_URL}/oauth/authorize"
HIDDEN_REQUEST = re.compile(r'name="request" value="([^"]*)"')


async def register(dash: Dash, **metadata: Any) -> httpx.Response:
    body = {
        "client_name": "Test agent",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "scope": "chat models",
        **metadata,
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as client:
        return await client.post("/oauth/register", json=body)


def oauth_client(dash: Dash, client_id: str, scope: str = "chat models", **options: Any) -> AsyncOAuth2Client:
    return AsyncOAuth2Client(
        client_id=client_id,
        token_endpoint_auth_method="none",
        redirect_uri=REDIRECT,
        scope=scope,
        code_challenge_method="S256",
        transport=httpx2.ASGITransport(dash.app),  # authlib's httpx integration is on httpx2
        **options,
    )


@dataclass
class Authorization:
    url: str
    verifier: str


def authorization(client: AsyncOAuth2Client, base: str = BASE_URL, **params: Any) -> Authorization:
    """The authorization URL of the app at ``base`` (its public base URL: the issuer and resource)."""
    verifier = generate_token(48)
    url, _ = client.create_authorization_url(
        f"{base}/oauth/authorize", code_verifier=verifier, resource=base, **params
    )
    return Authorization(url, verifier)


async def consent(browser: httpx.AsyncClient, url: str, decision: str = "approve") -> httpx.Response:
    """Follow the authorization URL to the consent page and decide there; the answer to the decision
    (a 303 to the client's redirect URI), or the first answer that is not the consent page."""
    answer = await browser.get(url.removeprefix(BASE_URL))
    if answer.status_code != 303 or not answer.headers["location"].startswith("/app/oauth/consent"):
        return answer
    shown = await browser.get(answer.headers["location"])
    if shown.status_code != 200 or "consent-form" not in shown.text:
        return shown
    hidden = HIDDEN_REQUEST.search(shown.text)
    assert hidden, shown.text[:500]
    form = {"csrf_token": csrf_of(shown.text), "request": unescape(hidden.group(1)), "decision": decision}
    return await browser.post("/app/oauth/consent", data=form)


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


async def access_token(dash: Dash, scope: str, person: Person | None = None) -> str:
    """An access token of ``person`` (a new one on the Starter plan by default) for a client registered
    with ``scope``, through the consent page."""
    browser = await dash.signed_in(person or await dash.person("starter"))
    client = oauth_client(dash, (await register(dash, scope=scope)).json()["client_id"], scope=scope)
    base = dash.settings.public_base_url.rstrip("/")
    asked = authorization(client, base)
    decided = await consent(browser, asked.url)
    assert decided.status_code == 303, decided.text[:300]
    token = await client.fetch_token(
        f"{base}/oauth/token",
        authorization_response=decided.headers["location"],
        code_verifier=asked.verifier,
    )
    return token["access_token"]


class Memory:
    """The SDK client's token storage, in memory: it starts from nothing."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class ConsentingPerson:
    """The SDK's redirect and callback handlers for a signed-in person's browser: it decides
    (``decision``: approve or deny) and records where each consent landed (``landed``)."""

    def __init__(self, browser: httpx.AsyncClient) -> None:
        self.browser, self.decision = browser, "approve"
        self.landed: list[str] = []

    async def redirect_handler(self, url: str) -> None:
        decided = await consent(self.browser, url, decision=self.decision)
        assert decided.status_code == 303, decided.text[:300]
        self.landed.append(decided.headers["location"])

    async def callback_handler(self) -> AuthorizationCodeResult:
        answer = query_of(self.landed[-1])
        if "error" in answer:  # as a client does when the person said no
            raise OAuthFlowError(f"The authorization was refused: {answer['error']}.")
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"))
