"""The outbound URL guard for webhook targets (SSRF, OWASP API7:2023).

A URL passes when its syntax is plain (allowed scheme, no userinfo, no ambiguous numeric host)
and every address its host resolves to is publicly routable. The request then goes to the checked
address itself (``pinned_client``): the connection is opened to that IP, with no second look-up,
so a DNS answer that changes between check and connect (rebinding) cannot redirect it; TLS still
verifies the certificate against the host name (SNI). Every delivery checks again, so a host that
later resolves to a private address is refused then. Redirects are never followed. Look-ups use
the system resolver, or the DNS servers of ``AGENTGATE_DNS_NAMESERVERS`` when set. In sandbox mode
loopback targets (and plain http) are allowed, so a receiver on the same machine works in
development and tests; private ranges are refused anyway.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import httpcore
import httpx
import idna

from agent_server.accounts.sso.dns_txt import resolver as dns_resolver
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.tls import public_ca_context
from agent_server.foundation.urls import split_url

dns = lazy_module("dns")  # dnspython loads at the first target checked

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# A label like 0x7f, 0177 or 2130706433: inet_aton would read it as an address in another notation.
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)
# A DNS label as resolvers take it (letters, digits, hyphen, underscore; 1 to 63): anything else
# makes the look-up itself fail, some of it with UnicodeError rather than a resolution error.
_HOST_LABEL = re.compile(r"^[a-z0-9_-]{1,63}$")
MAX_URL_LENGTH = 2048


def refused(reason: str) -> ValidationFailed:
    return ValidationFailed(f"Webhook URL refused: {reason}.", code="url_refused", param="url")


def ascii_host(host: str) -> str:
    """``host`` in the ASCII form DNS, TLS and httpx use (IDNA 2008, as httpx encodes it).

    Refused when it has none (a control character, an empty or too long label): the look-up
    would otherwise raise UnicodeError, and the pinned connection compare a different name.
    """
    try:
        encoded = host if host.isascii() else idna.encode(host).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        raise refused("the host is not a valid host name") from None
    if len(encoded) > 253 or not all(_HOST_LABEL.match(label) for label in encoded.split(".")):
        raise refused("the host is not a valid host name")
    return encoded


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def nameserver_resolver(nameservers: Sequence[str]) -> Resolver:
    """A and AAAA look-ups through the given DNS servers (``ip`` or ``ip:port``), not the system's."""

    async def resolve(host: str, port: int) -> list[str]:
        found = dns_resolver(list(nameservers))
        addresses: list[str] = []
        for record_type in ("A", "AAAA"):
            try:
                answer = await found.resolve(host, record_type, search=False)
            except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
                continue
            except dns.exception.DNSException as exc:
                raise OSError(f"DNS look-up failed: {type(exc).__name__}") from exc
            addresses.extend(str(record.address) for record in answer)
        if not addresses:
            raise OSError("no address")
        return list(dict.fromkeys(addresses))

    return resolve


def address_problem(ip: IPAddress, allow_loopback: bool = False) -> str | None:
    """Why ``ip`` must not be a webhook target, or None when it is publicly routable."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.teredo is not None:
            return "a Teredo address"
        if embedded is not None:
            problem = address_problem(embedded, allow_loopback)
            if problem or ip.ipv4_mapped:
                return problem and f"{problem} (embedded in {ip})"
    if allow_loopback and ip.is_loopback:
        return None
    for flag in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{flag}"):
            return f"{ip} is a {flag.replace('_', '-')} address"
    if not ip.is_global:  # e.g. carrier-grade NAT 100.64/10
        return f"{ip} is not globally routable"
    return None


@dataclass(frozen=True)
class Target:
    """A checked URL and the address the request is pinned to."""

    url: str
    host: str
    port: int
    address: str


class UrlGuard:
    def __init__(
        self,
        *,
        allow_loopback: bool,
        allow_http: bool,
        resolver: Resolver | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.allow_loopback = allow_loopback
        self.allow_http = allow_http
        self.resolver = resolver or system_resolver
        self.timeout = timeout

    @classmethod
    def for_mode(
        cls, sandbox: bool, resolver: Resolver | None = None, nameservers: Sequence[str] = ()
    ) -> UrlGuard:
        if resolver is None and nameservers:
            resolver = nameserver_resolver(nameservers)
        return cls(allow_loopback=sandbox, allow_http=sandbox, resolver=resolver)

    def parse(self, url: str) -> tuple[str, int, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
        """Syntax checks before any resolution: (host, port, IP literal or None)."""
        if len(url) > MAX_URL_LENGTH:
            raise refused("too long")
        parts = split_url(url)
        if parts is None:
            raise refused("malformed")
        port = parts.port
        schemes = ("https", "http") if self.allow_http else ("https",)
        if parts.scheme not in schemes:
            raise refused(f"the scheme must be {' or '.join(schemes)}")
        if "@" in parts.netloc or parts.username or parts.password:
            raise refused("credentials in the URL are not allowed")
        host = (parts.hostname or "").rstrip(".")
        if not host or len(host) > 253 or any(c.isspace() for c in host):
            raise refused("no valid host")
        if parts.fragment:
            raise refused("fragments are not allowed")
        port = port or (443 if parts.scheme == "https" else 80)
        try:
            literal: IPAddress | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
            host = ascii_host(host)
            if all(_NUMERIC_LABEL.match(label) for label in host.split(".")):
                raise refused("numeric host names in other notations are not allowed") from None
        return host, port, literal

    def check_addresses(self, addresses: Iterable[str]) -> list[str]:
        checked = []
        for text in addresses:
            try:
                ip = ipaddress.ip_address(text.split("%", 1)[0])
            except ValueError as exc:
                raise refused("the host resolved to an unreadable address") from exc
            problem = address_problem(ip, self.allow_loopback)
            if problem:
                raise refused(problem)
            mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
            checked.append(str(mapped or ip))
        if not checked:
            raise refused("the host does not resolve")
        return checked

    async def resolve(self, url: str) -> Target:
        """Check ``url`` and every address of its host; raise ValidationFailed(code url_refused)."""
        host, port, literal = self.parse(url)
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                addresses = await asyncio.wait_for(self.resolver(host, port), self.timeout)
            except (OSError, TimeoutError) as exc:
                raise refused("the host does not resolve") from exc
        checked = self.check_addresses(addresses)
        return Target(url, host, port, checked[0])


def _normal_host(host: str) -> str:
    host = host.strip("[]").rstrip(".").lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects every request for ``host`` to the checked address and refuses any other host."""

    def __init__(self, host: str, address: str) -> None:
        self.host, self.address = host, address
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[tuple[int, int, int | bytes]] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if _normal_host(host) != _normal_host(self.host):
            raise httpcore.ConnectError(f"connection to unchecked host {host!r} refused")
        return await self._inner.connect_tcp(
            self.address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(self, *args: object, **kwargs: object) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not webhook targets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, target: Target) -> None:
        # No proxy from the environment: we connect ourselves. The shared context, given here too,
        # keeps the base class from loading the CA bundle again for every delivery.
        super().__init__(verify=public_ca_context(), trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=public_ca_context(),
            max_connections=2,
            network_backend=_PinnedBackend(target.host, target.address),
        )


def pinned_client(target: Target, timeout: float) -> httpx.AsyncClient:
    """A client for one delivery: pinned address, no redirects, no environment proxies."""
    return httpx.AsyncClient(
        transport=_PinnedTransport(target),
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        follow_redirects=False,
        trust_env=False,
    )
