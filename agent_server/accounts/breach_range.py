"""The optional online half of the breach check: a k-anonymity range API (``GET <url>/range/<5 hex>``).

Only the first 5 hex digits of the password's SHA-1 leave the process. The answer lists, one per
line as ``SUFFIX:COUNT``, the other 35 digits of every breached hash with that prefix; with
``Add-Padding: true`` it also holds decoy lines with count 0, so its size does not tell which prefix
was asked. If the service fails, answers something else or is slower than the timeout, the lookup
gives None (the caller keeps the offline verdict: fail-open for this part only) and logs one
warning that names neither the password nor its hash.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Callable

import httpx

log = logging.getLogger("agentgate.accounts")

MAX_ANSWER_BYTES = 1 << 20  # real answers are ~40 KB (about 1,000 lines with padding)
_LINE = re.compile(r"([0-9A-F]{35}):(\d+)")


class RangeAnswerInvalid(Exception):
    """The service answered, but not with a range list."""


class BreachRangeClient:
    def __init__(
        self,
        base_url: str,
        timeout: float,
        http: Callable[[], httpx.AsyncClient] | None = None,
        user_agent: str = "",
    ) -> None:
        self.base_url, self.timeout, self.http = base_url.rstrip("/"), timeout, http
        self.headers = {"Add-Padding": "true", "User-Agent": user_agent or "agentgate-password-check"}

    async def times_seen(self, password: str) -> int | None:
        """How often the service has seen ``password`` in breaches (0: never), or None when it is unavailable."""
        digest = hashlib.sha1(password.encode(), usedforsecurity=False).hexdigest().upper()
        prefix, suffix = digest[:5], digest[5:]
        try:
            async with asyncio.timeout(self.timeout):
                answer = await self._fetch(prefix)
            return _count(answer, suffix)
        except (httpx.HTTPError, TimeoutError, RangeAnswerInvalid, UnicodeDecodeError) as exc:
            # The exception's text may hold the URL, and with it the hash prefix: log only its kind.
            log.warning(
                "password breach range API unavailable (%s); only the offline list was checked",
                _describe(exc),
            )
            return None

    async def _fetch(self, prefix: str) -> str:
        if self.http is not None:
            return await self._get(self.http(), prefix)
        async with httpx.AsyncClient(follow_redirects=False) as client:  # the CLI runs without services
            return await self._get(client, prefix)

    async def _get(self, client: httpx.AsyncClient, prefix: str) -> str:
        async with client.stream("GET", f"{self.base_url}/range/{prefix}", headers=self.headers) as response:
            if response.status_code != 200:
                raise RangeAnswerInvalid(f"status {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise RangeAnswerInvalid(f"an answer over {MAX_ANSWER_BYTES} bytes")
        return body.decode()


def _count(answer: str, suffix: str) -> int:
    lines = [line.strip().upper() for line in answer.splitlines() if line.strip()]
    if not lines:  # every prefix has entries, and padding adds more: an empty list is no answer
        raise RangeAnswerInvalid("an empty answer")
    seen = 0
    for line in lines:
        parsed = _LINE.fullmatch(line)
        if parsed is None:
            raise RangeAnswerInvalid("a line that is not SUFFIX:COUNT")
        if parsed.group(1) == suffix:
            seen = int(parsed.group(2))  # padding lines have count 0
    return seen


def _describe(exc: Exception) -> str:
    if isinstance(exc, RangeAnswerInvalid):
        return str(exc)
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return "timed out"
    return type(exc).__name__
