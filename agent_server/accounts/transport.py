"""Whether people reach the service over TLS, from the public base URL (docs/security.md, "Dashboard
cookies").

In production the dashboard's cookies are always ``Secure``, so browsers send them over https only.
A production start with a plain-http base URL on a host other than loopback is therefore refused:
sign-in could not work there, and passwords and session tokens would cross the network readable.
On loopback (a trial on one machine) it starts with a warning; browsers treat ``localhost`` as secure.
"""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlsplit

from agent_server.foundation.settings import Settings

log = logging.getLogger("agentgate.accounts")


def loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_http(settings: Settings) -> bool:
    return urlsplit(settings.public_base_url).scheme == "http"


def plain_http_loopback(settings: Settings) -> bool:
    return plain_http(settings) and loopback(urlsplit(settings.public_base_url).hostname)


def check_base_url(settings: Settings) -> str | None:
    """In production: the reason a plain-http base URL cannot serve people (the start is refused), or
    None (a warning is logged for plain http on loopback)."""
    if settings.sandbox or not plain_http(settings):
        return None
    if plain_http_loopback(settings):
        log.warning(
            "production mode with a plain-http AGENTGATE_PUBLIC_BASE_URL on loopback (%s): fine for a "
            "trial on this machine only; serve people over https",
            settings.public_base_url,
        )
        return None
    return (
        f"AGENTGATE_PUBLIC_BASE_URL is plain http ({settings.public_base_url}) in production mode: the "
        "dashboard's cookies are Secure (sent over https only), so nobody could sign in, and passwords "
        "and session tokens would cross the network readable. Serve the service over https (a TLS proxy "
        "in front is fine) and set the https URL."
    )
