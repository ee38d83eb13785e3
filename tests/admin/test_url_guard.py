"""The outbound URL guard refuses private, loopback, link-local and odd targets before any connect."""

from __future__ import annotations

import httpcore
import pytest

from agent_server.foundation.errors import ValidationFailed
from agent_server.webhooks.url_guard import Target, UrlGuard, _PinnedBackend

REFUSED_IN_PRODUCTION = [
    "https://127.0.0.1/hook",
    "https://[::1]/hook",
    "https://10.0.0.1/hook",
    "https://10.255.255.254/hook",
    "https://172.16.0.1/hook",
    "https://172.31.255.1/hook",
    "https://192.168.1.10/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://169.254.0.5/hook",
    "https://100.64.0.1/hook",  # carrier-grade NAT
    "https://0.0.0.0/hook",
    "https://[::]/hook",
    "https://224.0.0.1/hook",
    "https://240.0.0.1/hook",
    "https://[fc00::1]/hook",
    "https://[fe80::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",  # IPv4-mapped IPv6
    "https://[::ffff:a9fe:a9fe]/hook",  # mapped 169.254.169.254
    "https://[64:ff9b::a00:1]/hook",  # NAT64 of 10.0.0.1
    "https://[2002:a00:1::]/hook",  # 6to4 of 10.0.0.1
    "https://2130706433/hook",  # 127.0.0.1 in decimal
    "https://0x7f000001/hook",  # in hex
    "https://0177.0.0.1/hook",  # in octal
    "https://127.1/hook",  # short form
    "https://user:pass@example.com/hook",  # credentials
    "https://example.com@127.0.0.1/hook",
    "http://example.com/hook",  # plain http in production
    "ftp://example.com/hook",
    "file:///etc/passwd",
    "https:///hook",
    "https://[example.com/hook",  # urllib cannot split it
    "https://example.com:70000/hook",  # no such port
    "https://localhost/hook",  # resolves to loopback
    "https://internal.example/hook",  # resolves to a private address
    "https://mixed.example/hook",  # one public and one private address
    "https://nowhere.example/hook",  # does not resolve
]

DNS = {
    "localhost": ["127.0.0.1", "::1"],
    "internal.example": ["10.1.2.3"],
    "mixed.example": ["93.184.216.34", "192.168.0.7"],
    "public.example": ["93.184.216.34"],
}


async def fake_resolver(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise OSError("NXDOMAIN")
    return DNS[host]


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connect attempted through httpcore; the guard must refuse before any."""
    calls: list[tuple[str, int]] = []

    async def spy(self: object, host: str, port: int, **kwargs: object) -> None:
        calls.append((host, port))
        raise httpcore.ConnectError("spy: no network in this test")

    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", spy)
    return calls


@pytest.mark.parametrize("url", REFUSED_IN_PRODUCTION)
async def test_production_guard_refuses_before_connecting(url: str, connects: list) -> None:
    guard = UrlGuard.for_mode(sandbox=False, resolver=fake_resolver)
    with pytest.raises(ValidationFailed) as caught:
        await guard.resolve(url)
    assert caught.value.code == "url_refused" and caught.value.param == "url"
    assert connects == []


async def test_public_host_passes_and_is_pinned_to_the_checked_address() -> None:
    guard = UrlGuard.for_mode(sandbox=False, resolver=fake_resolver)
    target = await guard.resolve("https://public.example/hook")
    assert target == Target("https://public.example/hook", "public.example", 443, "93.184.216.34")


async def test_pinned_backend_connects_to_the_checked_address_not_a_new_dns_answer(connects: list) -> None:
    # DNS rebinding: whatever the name resolves to later, the connection goes to the checked IP.
    backend = _PinnedBackend("public.example", "93.184.216.34")
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("public.example", 443)
    with pytest.raises(httpcore.ConnectError, match="unchecked host"):
        await backend.connect_tcp("other.example", 443)
    assert connects == [("93.184.216.34", 443)]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://[::1]:9/hook",
        "http://localhost:9/hook",
        "https://[::ffff:127.0.0.1]/",
    ],
)
async def test_sandbox_allows_loopback(url: str) -> None:
    guard = UrlGuard.for_mode(sandbox=True, resolver=fake_resolver)
    assert (await guard.resolve(url)).address in ("127.0.0.1", "::1")


@pytest.mark.parametrize(
    "url", ["http://10.0.0.1/", "http://192.168.1.1/", "http://169.254.169.254/", "http://internal.example/"]
)
async def test_sandbox_still_refuses_private_ranges(url: str) -> None:
    guard = UrlGuard.for_mode(sandbox=True, resolver=fake_resolver)
    with pytest.raises(ValidationFailed):
        await guard.resolve(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://ex\x84ample.com/hook",  # a C1 control character: no IDNA form, UnicodeError in getaddrinfo
        "https://a..example/hook",  # an empty label
        "https://" + "a" * 64 + ".example/hook",  # a label over 63 characters
        "https://ex%ample.com/hook",
        "https://\u2764.example/hook",  # a symbol IDNA 2008 disallows
    ],
)
async def test_a_host_with_no_valid_dns_name_is_refused_before_any_look_up(url: str) -> None:
    looked_up: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["93.184.216.34"]

    guard = UrlGuard.for_mode(sandbox=False, resolver=resolver)
    with pytest.raises(ValidationFailed) as caught:
        await guard.resolve(url)
    assert caught.value.code == "url_refused" and "not a valid host name" in caught.value.message
    assert looked_up == []


async def test_an_internationalized_host_is_resolved_in_its_ascii_form() -> None:
    # The form httpx connects to, so the pinned connection meets the name that was checked.
    looked_up: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["93.184.216.34"]

    target = await UrlGuard.for_mode(sandbox=False, resolver=resolver).resolve("https://Bücher.example/x")
    assert looked_up == ["xn--bcher-kva.example"] and target.host == "xn--bcher-kva.example"
