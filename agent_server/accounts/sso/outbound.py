"""Calls to a tenant's identity provider (discovery, keys, token endpoint), through the outbound guard.

Every URL an identity provider names is a URL a tenant admin chose, so each call goes through the
same guard as webhooks (agent_server/webhooks/url_guard.py): loopback and plain http only in
sandbox, private and reserved targets never, the connection pinned to the checked address, no
redirects. Answers are read up to a size bound and must be JSON objects.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agent_server.foundation.errors import UpstreamFailed, ValidationFailed
from agent_server.webhooks.url_guard import UrlGuard, pinned_client

MAX_ANSWER_BYTES = 512 * 1024
TIMEOUT_SECONDS = 10.0


class ProviderUnreachable(UpstreamFailed):
    """The identity provider did not answer as OpenID Connect says (network, status, not JSON)."""

    default_code = "sso_provider_unreachable"


def refused_url(what: str, problem: ValidationFailed, param: str = "issuer") -> ValidationFailed:
    """400 ``sso_url_refused`` naming ``param``: the issuer, or the field of the discovery document."""
    reason = problem.message.split(": ", 1)[-1].rstrip(".")  # the guard's reason, without its prefix
    return ValidationFailed(
        f"The identity provider's {what} URL is refused: {reason}.", code="sso_url_refused", param=param
    )


class ProviderHttp:
    def __init__(self, guard: UrlGuard, timeout: float = TIMEOUT_SECONDS) -> None:
        self.guard, self.timeout = guard, timeout

    def check_syntax(self, url: object, what: str, param: str = "issuer") -> str:
        """A URL the provider names, checked before use (scheme, host); not resolved."""
        if not isinstance(url, str):
            raise ProviderUnreachable(f"The identity provider names no {what} URL.")
        try:
            self.guard.parse(url)
        except ValidationFailed as exc:
            raise refused_url(what, exc, param) from None
        return url

    async def check_target(self, url: str, what: str, param: str) -> None:
        """Resolve ``url``'s host now and refuse it, naming ``param``, when the guard would: a
        connection saved with an endpoint on an internal address is refused at save, not at the
        first sign-in."""
        try:
            await self.guard.resolve(url)
        except ValidationFailed as exc:
            raise refused_url(what, exc, param) from None

    async def fetch(
        self,
        method: str,
        url: str,
        what: str,
        *,
        body: str | None = None,
        headers: dict[str, str] | None = None,
        param: str = "issuer",
    ) -> tuple[int, bytes]:
        """(status, body up to ``MAX_ANSWER_BYTES``) of one call to the provider's ``what``."""
        try:
            target = await self.guard.resolve(url)
        except ValidationFailed as exc:
            raise refused_url(what, exc, param) from None
        try:
            async with (
                pinned_client(target, self.timeout) as client,
                client.stream(method, url, content=body, headers=headers) as response,
            ):
                return response.status_code, await _read_bounded(response, what)
        except httpx.HTTPError as exc:
            raise ProviderUnreachable(
                f"The identity provider's {what} at {url} did not answer ({type(exc).__name__})."
            ) from None

    async def request(
        self,
        method: str,
        url: str,
        what: str,
        *,
        body: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """(status, JSON object) of one call to the provider's ``what`` endpoint."""
        sent = {"Accept": "application/json", **(headers or {})}
        status, raw = await self.fetch(method, url, what, body=body, headers=sent)
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise ProviderUnreachable(
                f"The identity provider's {what} at {url} answered HTTP {status} without a JSON object."
            )
        return status, payload

    async def get_text(self, url: str, what: str, param: str) -> str:
        """A document the provider publishes (SAML metadata): 200 and UTF-8 text, else a 400 naming
        ``param`` (the admin typed the URL, so it is their input that does not work)."""
        try:
            status, raw = await self.fetch("GET", url, what, param=param)
            if status != 200:
                raise ProviderUnreachable(f"The {what} at {url} answered HTTP {status}.")
            return raw.decode("utf-8")
        except ProviderUnreachable as exc:
            raise ValidationFailed(exc.message, code="sso_metadata_unreachable", param=param) from None
        except UnicodeDecodeError:
            raise ValidationFailed(
                f"The {what} at {url} is not UTF-8 text.", code="sso_metadata_unreachable", param=param
            ) from None

    async def get_json(self, url: str, what: str) -> dict[str, Any]:
        status, payload = await self.request("GET", url, what)
        if status != 200:
            raise ProviderUnreachable(f"The identity provider's {what} at {url} answered HTTP {status}.")
        return payload


async def _read_bounded(response: httpx.Response, what: str) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ProviderUnreachable(
                f"The identity provider's {what} answer is over {MAX_ANSWER_BYTES} bytes."
            )
        chunks.append(chunk)
    return b"".join(chunks)
