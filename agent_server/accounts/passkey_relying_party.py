"""Who the passkeys belong to: the WebAuthn relying party (id, name, origins) from settings.

Defaults: the id is the host of ``public_base_url`` (browsers accept a domain or ``localhost`` there,
never an IP address); the origins are those of ``public_base_url`` and ``app_base_url``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_server.settings import Settings

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """The serialised origin browsers put in clientDataJSON: scheme://host[:port], default port left out."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = "" if parts.port in (None, DEFAULT_PORTS.get(parts.scheme)) else f":{parts.port}"
    return f"{parts.scheme.lower()}://{host}{port}"


@dataclass(frozen=True, slots=True)
class RelyingParty:
    id: str
    name: str
    origins: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: Settings, default_name: str) -> RelyingParty:
        rp_id = settings.webauthn_rp_id or urlsplit(settings.public_base_url).hostname or "localhost"
        urls = settings.webauthn_origins or [settings.public_base_url, settings.app_base_url]
        origins = tuple(dict.fromkeys(origin_of(url) for url in urls))
        return cls(rp_id.lower(), settings.webauthn_rp_name or default_name, origins)
