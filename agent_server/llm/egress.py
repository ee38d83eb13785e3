"""How the gateway reaches an upstream: the proxy the environment names and how TLS is verified.

Proxies come from the standard variables (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, lower
case first, and ``NO_PROXY``), read with the standard library's rules, once per upstream at start.
TLS is verified against the system's CAs (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` move them), or
against only the upstream's own ``ca_bundle`` when it names one.
"""

from __future__ import annotations

import base64
import ssl
import urllib.request
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import certifi
import httpx


def authority(host: str, port: int) -> str:
    """``host:port`` as a request line or CONNECT names it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class Proxy:
    """A proxy URL split into where to connect and the ``Proxy-Authorization`` it wants."""

    url: str = field(repr=False)  # may hold credentials: never in a repr or a log line
    scheme: str
    host: str
    port: int
    authorization: bytes | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> Proxy:
        parts = urlsplit(url if "://" in url else f"http://{url}")  # curl reads "host:port" as http
        scheme = parts.scheme.lower()
        if not parts.hostname:
            raise ValueError("the proxy URL names no host")
        port = parts.port or (443 if scheme == "https" else 1080 if scheme.startswith("socks") else 80)
        authorization = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = b"Basic " + base64.b64encode(pair)
        return cls(parts.geturl(), scheme, parts.hostname, port, authorization)

    def __str__(self) -> str:
        """The proxy without its credentials: safe to log."""
        return f"{self.scheme}://{authority(self.host, self.port)}"


def environment_proxy(url: httpx.URL) -> Proxy | None:
    """The proxy for requests to ``url``, or None (no proxy variable, or ``NO_PROXY`` matches)."""
    proxies = urllib.request.getproxies_environment()
    value = proxies.get(url.scheme) or proxies.get("all")
    if not value or urllib.request.proxy_bypass_environment(url.netloc.decode("ascii"), proxies):
        return None
    return Proxy.parse(value)


@cache
def tls_context(ca_bundle: Path | None = None) -> ssl.SSLContext:
    """A verifying client context; one per bundle per process (loading the system CAs takes ~20 ms)."""
    if ca_bundle is not None:
        try:
            return ssl.create_default_context(cafile=str(ca_bundle))
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"ca_bundle {ca_bundle}: not a readable PEM bundle ({exc})") from exc
    context = ssl.create_default_context()
    if not context.cert_store_stats()["x509_ca"]:
        # A system without a CA store (a slim container image): certifi's bundle instead.
        context.load_verify_locations(certifi.where())
    return context
