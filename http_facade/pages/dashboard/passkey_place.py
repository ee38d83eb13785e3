"""Whether a page can offer passkeys where the browser sees it, and where they would work if not.

Browsers refuse WebAuthn on an IP address (``127.0.0.1``: "This is an invalid domain"), so the
sign-in, registration and passkey pages show their passkey controls only at an origin the relying
party accepts (``RelyingParty.usable_at``); on a loopback address in sandbox mode they point to the
same page at ``localhost``, where passkeys work.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from starlette.requests import Request

from agent_server.accounts.passkey_relying_party import is_ip
from http_facade.deps import page_origin

ELSEWHERE = "Passkeys need a name rather than an IP address: to use one, open this page at"
NOT_HERE = "Passkeys are not available at this address; sign in another way."


def passkey_place(request: Request) -> dict[str, Any]:
    """``passkeys_here``, and otherwise ``passkey_note`` and ``passkey_url`` for the page to say so."""
    accounts = request.app.state.accounts
    if accounts.registrations.passkeys is None:
        return {"passkeys_here": False, "passkey_note": "", "passkey_url": ""}
    rp = accounts.passkeys.rp
    if rp.usable_at(page_origin(request)):
        return {"passkeys_here": True, "passkey_note": "", "passkey_url": ""}
    host = request.url.hostname or ""
    if rp.follows_request and is_ip(host) and ipaddress.ip_address(host).is_loopback:
        port = f":{request.url.port}" if request.url.port else ""
        url = f"{request.url.scheme}://localhost{port}{request.url.path}"
        return {"passkeys_here": False, "passkey_note": ELSEWHERE, "passkey_url": url}
    return {"passkeys_here": False, "passkey_note": NOT_HERE, "passkey_url": ""}
