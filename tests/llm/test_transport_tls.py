"""TLS to an upstream: verified against a configured CA bundle or the system's CAs, refused otherwise.

The upstream is a real TLS server on loopback with a certificate from a test CA (trustme).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from pydantic import ValidationError

from agent_server.foundation.errors import Unavailable
from agent_server.llm.egress import tls_context
from agent_server.llm.openai_compat import OpenAICompatBackend
from agent_server.llm.transport import PooledTransport
from tests.llm.conftest import config
from tests.llm.loopback import HttpServer, chat_upstream, tls_server
from tests.llm.test_openai_compat import chat

KINDS = ["pooled", "httpx"]


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def bundle(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "test-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
async def tls_upstream(ca: trustme.CA) -> AsyncIterator[HttpServer]:
    server = await HttpServer(chat_upstream, tls=tls_server(ca, "127.0.0.1", "localhost")).start()
    yield server
    await server.stop()


Make = Callable[..., OpenAICompatBackend]


@pytest.fixture
async def make() -> AsyncIterator[Make]:
    """Backends on one upstream config each, closed after the test."""
    made: list[OpenAICompatBackend] = []

    def build(base_url: str, kind: str, **extra: Any) -> OpenAICompatBackend:
        backend = OpenAICompatBackend(
            config(base_url, **extra), transport_kind=kind, connect_timeout=2.0, read_timeout=2.0, retries=0
        )
        made.append(backend)
        return backend

    yield build
    for backend in made:
        await backend.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_an_upstream_signed_by_the_configured_ca_is_trusted(
    make: Make, tls_upstream: HttpServer, bundle: Path, kind: str
) -> None:
    backend = make(tls_upstream.base_url, kind, ca_bundle=bundle)
    assert (await backend.complete(chat())).content == "Hello through the wire"
    deltas = [delta async for delta in backend.stream(chat(stream=True))]
    assert "".join(d.content for d in deltas) == "Hello through the wire"
    assert [r.target for r in tls_upstream.requests] == ["/v1/chat/completions"] * 2


@pytest.mark.parametrize("kind", KINDS)
async def test_an_upstream_the_system_does_not_trust_is_refused(
    make: Make, tls_upstream: HttpServer, kind: str
) -> None:
    backend = make(tls_upstream.base_url, kind)  # no bundle: the system's CAs, which lack the test CA
    with pytest.raises(Unavailable):
        await backend.complete(chat())
    assert tls_upstream.requests == []  # not one byte of the request left the client


async def test_the_pooled_transport_says_why_it_refused(tls_upstream: HttpServer, bundle: Path) -> None:
    transport = PooledTransport(ssl_context=tls_context(None))
    try:
        with pytest.raises(httpx.ConnectError, match="not trusted") as caught:
            await transport.handle_async_request(httpx.Request("GET", f"{tls_upstream.base_url}/models"))
        assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
    finally:
        await transport.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_certificate_for_another_name_is_refused(
    make: Make, ca: trustme.CA, bundle: Path, kind: str
) -> None:
    server = await HttpServer(chat_upstream, tls=tls_server(ca, "api.example.test")).start()
    try:
        backend = make(server.base_url, kind, ca_bundle=bundle)  # the CA is trusted, the name is wrong
        with pytest.raises(Unavailable):
            await backend.complete(chat())
        assert server.requests == []
    finally:
        await server.stop()


async def test_ssl_cert_file_moves_the_system_store(
    make: Make, tls_upstream: HttpServer, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    tls_context.cache_clear()  # the system store is loaded once per process
    try:
        backend = make(tls_upstream.base_url, "pooled")
        assert (await backend.complete(chat())).content == "Hello through the wire"
    finally:
        monkeypatch.undo()
        tls_context.cache_clear()


def test_a_missing_or_malformed_bundle_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="is not a file"):
        config("https://127.0.0.1:1/v1", ca_bundle=tmp_path / "missing.pem")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    with pytest.raises(ValueError, match="not a readable PEM bundle"):
        OpenAICompatBackend(config("https://127.0.0.1:1/v1", ca_bundle=junk))
