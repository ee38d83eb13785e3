"""The one password rule, for every path that sets a password (registration, change, reset, CLI, bootstrap).

At least 12 characters and at most 1024 bytes; then refused when it is, up to predictable changes, a
leaked password, the product's published demo password or the account's own words (alone or joined
by punctuation), or when it is easy to guess (``breach.py``, offline and always on); then, when
``AGENTGATE_PASSWORD_BREACH_API_URL`` is set, refused when the k-anonymity range API has seen it in a
breach (``breach_range.py``; if that service is down the offline verdict stands). Passwords already
stored are never checked again: only setting one is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio.to_thread
import httpx

from agent_server.accounts.breach import Finding, account_words, assess
from agent_server.accounts.breach_range import BreachRangeClient
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.settings import Settings
from agent_server.gateway.passwords import MAX_BYTES, MIN_LENGTH, hash_password

_CHOOSE = (
    "Choose another: several unrelated words (a passphrase), or a random password from a password manager."
)
_REFUSALS: dict[Finding, tuple[str, str]] = {
    "breached": (
        "password_breached",
        "This password is on a list of passwords leaked in data breaches; changing its case, swapping "
        "letters for look-alike symbols, repeating it or adding digits, a year or symbols does not "
        f"make it safe. {_CHOOSE}",
    ),
    "published": (
        "password_breached",
        "This password is published: it is the demo password of this product's README and Makefile, so "
        f"anyone can try it. {_CHOOSE}",
    ),
    "account_words": (
        "password_too_guessable",
        "This password is built on your own details (e-mail address, organisation or the service's "
        "name, alone or joined by punctuation), which attackers try first. "
        f"{_CHOOSE}",
    ),
    "guessable": (
        "password_too_guessable",
        "This password is too easy to guess: it is made of common passwords, words, names, dates, "
        f"sequences or keyboard patterns. {_CHOOSE}",
    ),
}
_SEEN_ONLINE = f"This password has appeared in a data breach, so attackers try it first. {_CHOOSE}"


def check_length(password: str) -> None:
    if len(password) < MIN_LENGTH:
        raise ValidationFailed(
            f"The password needs at least {MIN_LENGTH} characters; several unrelated words are "
            "easiest to remember.",
            code="password_too_short",
            param="password",
        )
    if len(password.encode()) > MAX_BYTES:
        raise ValidationFailed(
            f"The password may have at most {MAX_BYTES} bytes.", code="password_too_long", param="password"
        )


class PasswordPolicy:
    def __init__(self, settings: Settings, http: Callable[[], httpx.AsyncClient] | None = None) -> None:
        self.settings = settings
        url = settings.password_breach_api_url
        self.range_api = (
            BreachRangeClient(url, settings.password_breach_api_timeout_seconds, http, settings.service_name)
            if url
            else None
        )

    async def check(self, password: str, *, user_inputs: Sequence[str] = ()) -> None:
        """Raise a 400 naming the rule the password breaks; ``user_inputs`` are the account's own words
        (e-mail address, organisation; the service's name is added here)."""
        check_length(password)
        words = account_words([*user_inputs, self.settings.service_name])
        finding = await anyio.to_thread.run_sync(assess, password, words)  # ~1-20 ms of CPU
        if finding is not None:
            code, message = _REFUSALS[finding]
            raise ValidationFailed(message, code=code, param="password")
        if self.range_api is not None and await self.range_api.times_seen(password):
            raise ValidationFailed(_SEEN_ONLINE, code="password_breached", param="password")

    async def hash_new(self, password: str, *, user_inputs: Sequence[str] = ()) -> str:
        """Check ``password`` against the rule, then hash it (argon2id)."""
        await self.check(password, user_inputs=user_inputs)
        return await hash_password(password)
