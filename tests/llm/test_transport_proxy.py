"""Proxies from the environment: https through a CONNECT tunnel, http forwarded in absolute form,
``NO_PROXY`` bypassing, a refusing proxy as an upstream error, and which transport each case takes.
The proxy is a real forward proxy on loopback that records every request line it saw."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.health import UpstreamHealth
from agent_server.llm.openai_compat import OpenAICompatBackend
from agent_server.llm.transport import PooledTransport, upstream_transport
from tests.llm.conftest import config
from tests.llm.loopback import ForwardProxy, HttpServer, chat_upstream, tls_server
from tests.llm.test_openai_compat import chat

VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
CREDENTIALS = "Basic " + base64.b64encode(b"agent:s3cret pass").decode()
Make = Callable[..., OpenAICompatBackend]


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine sets, each test names its own proxy variables."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


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
    server = await HttpServer(chat_upstream, tls=tls_server(ca, "127.0.0.1")).start()
    yield server
    await server.stop()


@pytest.fixture
async def upstream() -> AsyncIterator[HttpServer]:
    server = await HttpServer(chat_upstream).start()
    yield server
    await server.stop()


@pytest.fixture
async def proxy() -> AsyncIterator[ForwardProxy]:
    server = await ForwardProxy(credentials=CREDENTIALS).start()
    yield server
    await server.stop()


def with_credentials(proxy: ForwardProxy) -> str:
    return f"http://agent:s3cret%20pass@127.0.0.1:{proxy.port}"


@pytest.fixture(params=["pooled", "httpx"])
async def make(request: pytest.FixtureRequest) -> AsyncIterator[Make]:
    made: list[OpenAICompatBackend] = []

    def build(base_url: str, **extra: Any) -> OpenAICompatBackend:
        backend = OpenAICompatBackend(
            config(base_url, **extra), transport_kind=request.param, connect_timeout=2.0, retries=0
        )
        made.append(backend)
        return backend

    yield build
    for backend in made:
        await backend.aclose()


async def test_https_goes_through_a_connect_tunnel(
    make: Make, tls_upstream: HttpServer, proxy: ForwardProxy, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", with_credentials(proxy))
    backend = make(tls_upstream.base_url, ca_bundle=bundle)
    assert (await backend.complete(chat())).content == "Hello through the wire"
    streamed = [delta.content async for delta in backend.stream(chat(stream=True))]
    assert "".join(streamed) == "Hello through the wire"
    target = f"127.0.0.1:{tls_upstream.port}"
    assert proxy.passages and all(p.line == f"CONNECT {target} HTTP/1.1" for p in proxy.passages)
    assert all(p.authorization == CREDENTIALS for p in proxy.passages)
    # Inside the tunnel: TLS to the upstream itself, which never sees the proxy's credentials.
    assert [r.target for r in tls_upstream.requests] == ["/v1/chat/completions"] * 2
    assert all("proxy-authorization" not in r.headers for r in tls_upstream.requests)


async def test_plain_http_is_forwarded_in_absolute_form(
    make: Make, upstream: HttpServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", with_credentials(proxy))
    backend = make(upstream.base_url)
    assert (await backend.complete(chat())).content == "Hello through the wire"
    url = f"http://127.0.0.1:{upstream.port}/v1/chat/completions"
    assert [(p.line, p.authorization) for p in proxy.passages] == [(f"POST {url} HTTP/1.1", CREDENTIALS)]
    assert upstream.requests[0].target == "/v1/chat/completions"
    assert upstream.requests[0].json()["model"] == "upstream-model-1"


async def test_no_proxy_goes_direct(
    make: Make, upstream: HttpServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", with_credentials(proxy))
    monkeypatch.setenv("HTTPS_PROXY", with_credentials(proxy))
    monkeypatch.setenv("NO_PROXY", "localhost, .internal.example, 127.0.0.1")
    assert (await make(upstream.base_url).complete(chat())).content == "Hello through the wire"
    assert proxy.passages == [] and len(upstream.requests) == 1


async def test_a_proxy_that_refuses_is_an_upstream_error(
    make: Make,
    tls_upstream: HttpServer,
    upstream: HttpServer,
    proxy: ForwardProxy,
    bundle: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)  # no credentials: 407
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    for backend in (make(tls_upstream.base_url, ca_bundle=bundle), make(upstream.base_url)):
        with pytest.raises(UpstreamFailed) as caught:
            await backend.complete(chat())
        assert caught.value.http_status == 502
    assert tls_upstream.requests == [] and upstream.requests == []


async def test_the_health_check_takes_the_same_path(
    tls_upstream: HttpServer, proxy: ForwardProxy, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", with_credentials(proxy))
    monitor = UpstreamHealth([config(tls_upstream.base_url, ca_bundle=bundle)])
    async with monitor.running():
        await monitor.check_all()
    assert monitor.summary() == "ok"
    assert proxy.passages and proxy.passages[-1].line == f"CONNECT 127.0.0.1:{tls_upstream.port} HTTP/1.1"
    assert tls_upstream.requests[-1].target == "/v1/models"
    assert tls_upstream.requests[-1].headers["authorization"].startswith("Bearer sk-upstream-")


@pytest.mark.parametrize(
    ("variable", "value", "kind", "expected"),
    [
        (None, None, "pooled", PooledTransport),
        ("HTTPS_PROXY", "http://127.0.0.1:3128", "pooled", PooledTransport),
        ("HTTPS_PROXY", "127.0.0.1:3128", "pooled", PooledTransport),  # no scheme: http, as curl reads it
        ("HTTPS_PROXY", "https://127.0.0.1:3129", "pooled", httpx.AsyncHTTPTransport),
        ("ALL_PROXY", "https://127.0.0.1:3129", "pooled", httpx.AsyncHTTPTransport),
        (None, None, "httpx", httpx.AsyncHTTPTransport),
    ],
)
async def test_which_transport_each_case_takes(
    variable: str | None, value: str | None, kind: str, expected: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    if variable and value:
        monkeypatch.setenv(variable, value)
    transport = upstream_transport(config("https://api.example.test/v1"), kind, 10)  # type: ignore[arg-type]
    try:
        assert type(transport) is expected
    finally:
        await transport.aclose()
