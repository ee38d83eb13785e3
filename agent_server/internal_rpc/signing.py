"""The bridge's request signature: HMAC-SHA256 over a timestamp and the raw body, used once.

    X-Internal-Key-Id:    <credential id>
    X-Internal-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>

A request is refused (401, JSON-RPC -32001) when a header is missing or malformed, the credential is
unknown, the timestamp is further than the tolerance from this server's clock, the MAC differs, or
the same signature was already used: each verified signature is remembered in the KV (shared by every
process with Redis) for twice the tolerance, longer than its timestamp stays acceptable.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, Unavailable
from agent_server.foundation.settings_rpc import InternalRpcKey
from agent_server.storage.kv import KV

SEEN_PREFIX = "internal-rpc:seen:"
HEX_MAC = re.compile(r"[0-9a-f]{64}")


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + body`` under ``secret``."""
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Internal-Signature`` value a calling service sends."""
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


class SignatureVerifier:
    def __init__(self, keys: list[InternalRpcKey], kv: KV, clock: Clock, tolerance: int) -> None:
        self.keys = {key.id: key for key in keys}
        if len(self.keys) != len(keys):
            raise ValueError("internal_rpc_keys: every credential needs an id of its own")
        self.kv, self.clock, self.tolerance = kv, clock, tolerance

    async def verify(self, key_id: str | None, header: str | None, body: bytes) -> InternalRpcKey:
        """The calling credential, once its signature is valid, fresh and new; else ``AuthFailed``."""
        if not key_id or not header:
            raise AuthFailed(
                "Unsigned request: send X-Internal-Key-Id and X-Internal-Signature (docs/internal-rpc.md).",
                code="signature_missing",
            )
        key = self.keys.get(key_id)
        if key is None:
            raise AuthFailed(f"Unknown credential id '{key_id[:64]}'.", code="unknown_key_id")
        timestamp, mac = _parse(header)
        skew = self.clock.now() - timestamp
        if abs(skew) > self.tolerance:
            raise AuthFailed(
                f"The signature's timestamp is {abs(skew):.0f} s {'old' if skew > 0 else 'ahead'}; "
                f"the window is {self.tolerance} s. Sign each request when sending it and keep clocks in sync.",
                code="signature_expired",
            )
        expected = signature(key.secret.get_secret_value(), timestamp, body)
        if not hmac.compare_digest(expected, mac):
            raise AuthFailed(
                "Wrong signature: HMAC-SHA256 of '<t>.' + the exact body bytes, hex, with this credential's secret.",
                code="signature_mismatch",
            )
        await self._use_once(key.id, mac)
        return key

    async def _use_once(self, key_id: str, mac: str) -> None:
        try:
            fresh = await self.kv.set_if_absent(f"{SEEN_PREFIX}{key_id}:{mac}", b"1", ttl=2 * self.tolerance)
        except Exception as exc:  # without the replay check a captured request could be sent again
            raise Unavailable("Replay protection is unavailable; retry shortly.", retry_after=1) from exc
        if not fresh:
            raise AuthFailed(
                "This signature was already used: sign every request afresh.", code="signature_replayed"
            )


def _parse(header: str) -> tuple[int, str]:
    fields: dict[str, str] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    timestamp, mac = fields.get("t", ""), fields.get("v1", "").lower()
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12 or not HEX_MAC.fullmatch(mac):
        raise AuthFailed(
            "Malformed X-Internal-Signature: expected 't=<unix seconds>,v1=<64 hex digits>'.",
            code="signature_malformed",
        )
    return int(timestamp), mac
