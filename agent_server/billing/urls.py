"""Where the provider sends the payer back: our own origins only.

A success, cancel or portal return URL must be on the public base URL, the app URL or an allowed
browser origin (``AGENTGATE_ALLOWED_ORIGINS``): the provider appends the session to it, so a foreign
address would hand a payer's session to someone else and make the checkout an open redirect.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from agent_server.errors import ValidationFailed
from agent_server.settings import Settings

SESSION_PLACEHOLDER = "{CHECKOUT_SESSION_ID}"  # the provider puts the session's id here
BILLING_PAGE = "/app/billing"  # the dashboard's plan and billing page (docs/pages.md)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class ReturnUrls:
    def __init__(self, settings: Settings) -> None:
        base = settings.public_base_url.rstrip("/")
        self.app = settings.app_base_url
        self.origins = {_origin(base), _origin(self.app)}
        self.patterns = [p.lower() for p in settings.allowed_origins]

    def success(self) -> str:
        return f"{self.app}{BILLING_PAGE}?session_ref={SESSION_PLACEHOLDER}"

    def cancel(self) -> str:
        return f"{self.app}{BILLING_PAGE}?checkout=canceled"

    def portal_return(self) -> str:
        return f"{self.app}{BILLING_PAGE}"

    def checked(self, url: str | None, default: str, param: str) -> str:
        if url is None:
            return default
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            raise ValidationFailed(
                f"'{param}' must be an absolute http(s) address without credentials.",
                code="invalid_url",
                param=param,
            )
        origin = _origin(url)
        if origin not in self.origins and not any(fnmatchcase(origin, p) for p in self.patterns):
            raise ValidationFailed(
                f"'{param}' must be on this service's own origins ({', '.join(sorted(self.origins))}) or an "
                "allowed origin (AGENTGATE_ALLOWED_ORIGINS).",
                code="return_url_not_allowed",
                param=param,
            )
        return url
