"""The `mcp` SDK's own `OAuthClientProvider` naming itself by a Client ID Metadata Document.

The SDK uses a ``client_metadata_url`` only when it is https and the server's metadata says
``client_id_metadata_document_supported``; otherwise it registers dynamically. So the document is
served over TLS on loopback, with a certificate of a test CA (trustme), and the app trusts that CA
the way a deployment would trust a private one: ``SSL_CERT_FILE``, which the outbound client context
(agent_server/foundation/tls.py) reads, set for this test only. The sandbox deployment lets the
outbound URL guard reach loopback. From nothing: discovery, the client id taken from the document
(no dynamic registration), consent, the tenant tools, a refresh, and a refusal after disconnecting.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import trustme
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from sqlmodel import select

from agent_server.foundation.settings import Settings
from agent_server.foundation.tls import public_ca_context
from agent_server.oauth.tables import OAuthClient
from tests.agent_auth.oauth_world import REDIRECT, ConsentingPerson, Memory, query_of
from tests.conftest import BASE_URL, free_port
from tests.mcp.support import rpc
from tests.pages.dashboard import Dash, dashboard_world, post_form

DOCUMENT_PATH = "/agents/sdk-client.json"


@dataclass
class Documents:
    """An https server on loopback publishing one client's metadata; ``fetched`` counts its GETs."""

    url: str
    fetched: list[str] = field(default_factory=list)


def _handler(documents: dict[str, bytes], fetched: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            body = documents.get(self.path, b"{}")
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def documents(tmp_path: Path) -> Iterator[Documents]:
    ca = trustme.CA()
    port = free_port()
    url = f"https://127.0.0.1:{port}{DOCUMENT_PATH}"
    document = {
        "client_id": url,
        "client_name": "SDK document agent",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    published = Documents(url)
    server = ThreadingHTTPServer(
        ("127.0.0.1", port), _handler({DOCUMENT_PATH: json.dumps(document).encode()}, published.fetched)
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(tls)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    bundle = tmp_path / "test-ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    # The app's outbound TLS trusts the test CA only, while this test runs; the shared context is
    # built again afterwards from the process's own environment.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SSL_CERT_FILE", str(bundle))
        patch.delenv("SSL_CERT_DIR", raising=False)
        public_ca_context.cache_clear()
        try:
            yield published
        finally:
            server.shutdown()
    public_ca_context.cache_clear()


@pytest.fixture
async def dash(settings: Settings, documents: Documents) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def clients_of(dash: Dash) -> list[OAuthClient]:
    async with dash.app.state.services.db.session() as session:
        return list((await session.execute(select(OAuthClient))).scalars())


async def test_the_sdk_names_itself_by_its_metadata_document_instead_of_registering(
    dash: Dash, documents: Documents
) -> None:
    browser = await dash.signed_in(await dash.person("starter"))
    person = ConsentingPerson(browser)
    landed = person.landed

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=f"{BASE_URL}/api/mcp.php",
        client_metadata=OAuthClientMetadata(
            client_name="SDK document agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
        client_metadata_url=documents.url,
    )
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(dash.app), auth=provider, timeout=30)
    async with (
        http,
        Client(streamable_http_client(f"{BASE_URL}/api/mcp.php", http_client=http), mode="legacy") as client,
    ):
        session = client.session
        usage = await session.call_tool("get_usage_this_month", {})  # the 401 starts the flow
        assert not usage.is_error and usage.structured_content["report"]["plan"]["id"] == "starter"
        assert storage.client is not None and storage.client.client_id == documents.url
        assert storage.client.client_secret is None and len(landed) == 1
        # The server fetched the document (once: it keeps it) and registered nobody dynamically.
        assert documents.fetched == [DOCUMENT_PATH]
        assert [c.client_id for c in await clients_of(dash)] == [documents.url]
        apps = await browser.get("/app/connected-apps")
        assert "SDK document agent" in apps.text  # the document's name, as the consent page showed it
        listed = {tool.name for tool in (await session.list_tools()).tools}
        assert "get_usage_this_month" in listed and "list_api_keys" not in listed
        assert storage.tokens is not None
        first_access, first_refresh = storage.tokens.access_token, storage.tokens.refresh_token
        storage.tokens.expires_in = 0  # at its end: the SDK refreshes before the next call
        provider.context.update_token_expiry(storage.tokens)
        assert not (await session.call_tool("get_usage_this_month", {})).is_error
        assert storage.tokens.access_token != first_access and storage.tokens.refresh_token != first_refresh
        assert len(landed) == 1  # refreshed, no new consent
        gone = await post_form(
            browser, "/app/connected-apps", "/app/connected-apps/disconnect", client_id=documents.url
        )
        assert gone.status_code == 303
    # Disconnected: the client's access and refresh tokens are refused at once.
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as raw:
        call = {"name": "get_usage_this_month", "arguments": {}}
        bearer = {"Authorization": f"Bearer {storage.tokens.access_token}"}
        assert (await rpc(raw, "tools/call", call, **bearer)).status_code == 401
        refresh = {
            "grant_type": "refresh_token",
            "refresh_token": storage.tokens.refresh_token,
            "client_id": documents.url,
        }
        refused = await raw.post("/oauth/token", data=refresh)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    # The SDK, its tokens dead, runs the whole flow again; the person, asked again, says no.
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
    assert len(landed) == 2 and query_of(landed[-1])["error"] == "access_denied"
    assert [c.client_id for c in await clients_of(dash)] == [documents.url]  # still never registered
