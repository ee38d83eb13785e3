"""Where the provider sends the payer back: our own origins only.

A success, cancel or portal return URL must be on the public base URL, the app URL or an allowed
browser origin (``AGENTGATE_ALLOWED_ORIGINS``): the provider appends the session to it, so a foreign
address would hand a payer's session to someone else and make the checkout an open redirect.

Origins are compared as (scheme, host, port), each exactly, with the scheme's default port filled
in; an allowed origin ending in ``:*`` takes any port of its host. Text patterns would let a host
that merely starts with an allowed one through (``http://localhost:8000.evil.example`` against
``http://localhost:*``).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.settings import Settings
from agent_server.foundation.urls import split_url

SESSION_PLACEHOLDER = "{CHECKOUT_SESSION_ID}"  # the provider puts the session's id here
BILLING_PAGE = "/app/billing"  # the dashboard's plan and billing page (docs/pages.md)
DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DNS_NAME = re.compile(rf"^(?:{_LABEL}\.)*{_LABEL}\.?$")


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str  # lower case; an IPv6 address without its brackets
    port: int | None  # None: any port (an allowed origin's ":*")

    def admits(self, other: Origin) -> bool:
        same_place = (self.scheme, self.host) == (other.scheme, other.host)
        return same_place and (self.port is None or self.port == other.port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{'*' if self.port is None else self.port}"


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return len(host) <= 253 and _DNS_NAME.match(host) is not None


def origin_of(url: str, *, any_port: bool = False) -> Origin | None:
    """The origin of an absolute http(s) URL without credentials, or None; ``any_port``: ``:*`` allowed."""
    wildcard = any_port and url.endswith(":*")
    parts = split_url(url[:-2] if wildcard else url)
    if parts is None:  # e.g. an unclosed IPv6 bracket ("https://[abc") or a port above 65535
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or parts.username is not None or parts.password is not None:
        return None
    host, port = parts.hostname, parts.port
    if not host or not _valid_host(host):
        return None
    return Origin(scheme, host.rstrip("."), None if wildcard else port or DEFAULT_PORTS[scheme])


class ReturnUrls:
    def __init__(self, settings: Settings) -> None:
        base = settings.public_base_url.rstrip("/")
        self.app = settings.app_base_url
        own = [origin_of(base), origin_of(self.app)]
        allowed = [origin_of(o, any_port=True) for o in settings.allowed_origins]
        self.own = [o for o in own if o is not None]
        self.allowed = [*self.own, *(o for o in allowed if o is not None)]

    def success(self) -> str:
        return f"{self.app}{BILLING_PAGE}?session_ref={SESSION_PLACEHOLDER}"

    def cancel(self) -> str:
        return f"{self.app}{BILLING_PAGE}?checkout=canceled"

    def portal_return(self) -> str:
        return f"{self.app}{BILLING_PAGE}"

    def checked(self, url: str | None, default: str, param: str) -> str:
        if url is None:
            return default
        origin = origin_of(url)
        if origin is None:
            raise ValidationFailed(
                f"'{param}' must be an absolute http(s) address with a valid host and port and without "
                "credentials.",
                code="invalid_url",
                param=param,
            )
        if not any(allowed.admits(origin) for allowed in self.allowed):
            own = ", ".join(sorted({str(o) for o in self.own}))
            raise ValidationFailed(
                f"'{param}' must be on this service's own origins ({own}) or an allowed origin "
                "(AGENTGATE_ALLOWED_ORIGINS): the same scheme, host and port.",
                code="return_url_not_allowed",
                param=param,
            )
        return url
