"""What ``POST /agent/auth`` answers (spec 2.9): a key, when it stops working, and its scopes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent_server.foundation.timeutil import iso


@dataclass(frozen=True, slots=True)
class IssuedKey:
    api_key: str  # exists only in this answer; the database keeps its digest
    expires_at: datetime
    scopes: list[str]
    key_id: str
    tenant_id: str

    def body(self) -> dict[str, Any]:
        return {"api_key": self.api_key, "expires_at": iso(self.expires_at), "scopes": self.scopes}
