"""Who the passkeys belong to: the WebAuthn relying party (id, name, origins) from settings.

Defaults: the id is the host of ``public_base_url``; the origins are those of ``public_base_url`` and
``app_base_url``. Browsers accept a domain or ``localhost`` as the id, never an IP address, so in
sandbox mode without ``AGENTGATE_WEBAUTHN_RP_ID`` the relying party follows the request's host
(``for_origin``): ``make run`` serves ``http://127.0.0.1:<port>`` and a browser opened at
``http://localhost:<port>`` makes and uses passkeys for ``localhost``. ``usable_at`` says whether a
page at an origin can offer passkeys at all, so pages show passkey controls only where they work.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_server.foundation.settings import Settings
from agent_server.foundation.urls import split_url

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """The serialised origin browsers put in clientDataJSON: scheme://host[:port], default port left out."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = "" if parts.port in (None, DEFAULT_PORTS.get(parts.scheme)) else f":{parts.port}"
    return f"{parts.scheme.lower()}://{host}{port}"


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def secure_context(url: str) -> bool:
    """Browsers offer WebAuthn only in a secure context: https, or http on localhost."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return parts.scheme == "https" or (
        parts.scheme == "http"
        and (host == "localhost" or host.endswith(".localhost") or host in ("127.0.0.1", "::1"))
    )


@dataclass(frozen=True, slots=True)
class RelyingParty:
    id: str
    name: str
    origins: tuple[str, ...]
    follows_request: bool = False  # sandbox without a configured id: the request's host is the id

    @classmethod
    def from_settings(cls, settings: Settings, default_name: str) -> RelyingParty:
        rp_id = settings.webauthn_rp_id or urlsplit(settings.public_base_url).hostname or "localhost"
        urls = settings.webauthn_origins or [settings.public_base_url, settings.app_base_url]
        origins = tuple(dict.fromkeys(origin_of(url) for url in urls))
        follows = settings.sandbox and not settings.webauthn_rp_id
        return cls(rp_id.lower(), settings.webauthn_rp_name or default_name, origins, follows)

    def for_origin(self, origin: str | None) -> RelyingParty:
        """The relying party of a ceremony started by a page at ``origin`` (``None``: the configured one)."""
        if not self.follows_request or not origin:
            return self
        parts = split_url(origin)  # the request's Origin header: anything a client sends
        host = ((parts.hostname if parts else None) or "").lower()
        if not host or is_ip(host):
            return self
        origins = tuple(dict.fromkeys((*self.origins, origin_of(origin))))
        return RelyingParty(host, self.name, origins, follows_request=False)

    def usable_at(self, origin: str) -> bool:
        """Whether a browser on a page at ``origin`` can make and use passkeys of this relying party."""
        parts = split_url(origin)
        host = ((parts.hostname if parts else None) or "").lower()
        if not host or is_ip(host) or not secure_context(origin):
            return False
        rp = self.for_origin(origin)
        return origin_of(origin) in rp.origins and (host == rp.id or host.endswith("." + rp.id))
