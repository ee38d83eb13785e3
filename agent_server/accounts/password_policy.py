"""The one password rule, for every path that sets a password (registration, change, reset, CLI, bootstrap).

At least 12 characters, at most 1024 bytes. (Breach-list checks: being added.)
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from agent_server.errors import ValidationFailed
from agent_server.gateway.passwords import MAX_BYTES, MIN_LENGTH, hash_password
from agent_server.settings import Settings


class PasswordPolicy:
    def __init__(self, settings: Settings, http: httpx.AsyncClient | None = None) -> None:
        self.settings, self.http = settings, http

    async def check(self, password: str, *, user_inputs: Sequence[str] = ()) -> None:
        """Raise a 400 naming the rule the password breaks; ``user_inputs`` are the account's own words."""
        if len(password) < MIN_LENGTH:
            raise ValidationFailed(
                f"The password needs at least {MIN_LENGTH} characters.",
                code="password_too_short",
                param="password",
            )
        if len(password.encode()) > MAX_BYTES:
            raise ValidationFailed(
                f"The password may have at most {MAX_BYTES} bytes.",
                code="password_too_long",
                param="password",
            )

    async def hash_new(self, password: str, *, user_inputs: Sequence[str] = ()) -> str:
        """Check ``password`` against the rule, then hash it (argon2id)."""
        await self.check(password, user_inputs=user_inputs)
        return await hash_password(password)
