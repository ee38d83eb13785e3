"""Client ID Metadata Documents: a client whose id is the URL of its metadata, served here on
loopback (sandbox mode lets the outbound guard reach loopback over http; private addresses never)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agent_server.foundation.settings import Settings
from tests.agent_auth.conftest import sdk
from tests.agent_auth.oauth_world import REDIRECT, TOKEN_URL, authorization, consent, oauth_client
from tests.conftest import BASE_URL, free_port
from tests.pages.dashboard import Dash, dashboard_world

DOCUMENTS: dict[str, Any] = {}


class _Documents(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(DOCUMENTS.get(self.path, {})).encode()
        self.send_response(200 if self.path in DOCUMENTS else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def documents() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Documents)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def publish(base: str, path: str, **document: Any) -> str:
    url = f"{base}{path}"
    DOCUMENTS[path] = {"client_id": url, "client_name": "Document agent", "redirect_uris": [REDIRECT],
                       "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none",
                       **document}  # fmt: skip
    return url


async def test_a_client_named_by_its_metadata_document_gets_tokens(dash: Dash, documents: str) -> None:
    client_id = publish(documents, "/agent/client.json")
    browser = await dash.signed_in(await dash.person("starter"))
    client = oauth_client(dash, client_id)
    asked = authorization(client)
    shown = await browser.get((await browser.get(asked.url.removeprefix(BASE_URL))).headers["location"])
    assert shown.status_code == 200 and "Document agent" in shown.text and "127.0.0.1:9" in shown.text
    decided = await consent(browser, asked.url)
    token = await client.fetch_token(
        TOKEN_URL, authorization_response=decided.headers["location"], code_verifier=asked.verifier
    )
    async with sdk(dash, token["access_token"]) as openai_client:  # type: ignore[arg-type]
        assert (await openai_client.models.list()).data
    refreshed = await client.refresh_token(TOKEN_URL, refresh_token=token["refresh_token"])
    assert refreshed["access_token"] != token["access_token"]


async def test_documents_that_cannot_name_a_client_are_refused(dash: Dash, documents: str) -> None:
    browser = await dash.signed_in(await dash.person("starter"))
    cases = {
        "http://10.0.0.1/client.json": None,  # a private address: never fetched
        publish(documents, "/other-id.json", client_id="https://elsewhere.example/c.json"): None,
        publish(documents, "/confidential.json", token_endpoint_auth_method="client_secret_basic"): None,
        publish(documents, "/bad-redirect.json", redirect_uris=["http://agent.example/cb"]): None,
        f"{documents}/missing.json": None,
    }
    for client_id in cases:
        asked = authorization(oauth_client(dash, client_id))
        answer = await browser.get(asked.url.removeprefix(BASE_URL))
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_client", client_id
    elsewhere = authorization(
        oauth_client(dash, publish(documents, "/ok.json")), redirect_uri="http://127.0.0.1:9/x"
    )
    answer = await browser.get(elsewhere.url.removeprefix(BASE_URL))
    assert answer.status_code == 400 and "location" not in answer.headers  # not among its redirect URIs
