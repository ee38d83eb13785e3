"""Passkey ceremonies waiting for their answer: the challenge and its context, kept in the KV.

An answer *takes* its ceremony (reads and deletes it in one step, atomic in Redis too), so of a
replayed, concurrent or late answer at most one finds it; after ``CEREMONY_SECONDS`` none does.
"""

from __future__ import annotations

import json
from typing import Any

from agent_server.foundation.errors import Unavailable, ValidationFailed
from agent_server.storage.kv import KV, KVUnavailable

CEREMONY_SECONDS = 300


class Ceremonies:
    def __init__(self, kv: KV) -> None:
        self.kv = kv

    async def keep(self, key: str, state: dict[str, Any]) -> None:
        try:
            await self.kv.set(key, json.dumps(state).encode(), ttl=CEREMONY_SECONDS)
        except KVUnavailable:
            raise _kv_down() from None

    async def take(self, key: str, param: str) -> dict[str, Any]:
        """The state kept under ``key``, once; 400 naming ``param`` when it is used or expired."""
        try:
            raw = await self.kv.take(key)
        except KVUnavailable:
            raise _kv_down() from None
        if raw is None:
            raise ValidationFailed(
                f"No passkey ceremony is waiting here: it was used already or is older than "
                f"{CEREMONY_SECONDS // 60} minutes. Ask for new options.",
                code="passkey_ceremony_expired",
                param=param,
            )
        return json.loads(raw)


def _kv_down() -> Unavailable:
    return Unavailable("Passkeys are unavailable for a moment; retry shortly.", retry_after=5)
