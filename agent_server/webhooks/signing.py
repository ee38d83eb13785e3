"""Webhook signatures: Standard Webhooks (``webhook-*`` headers) and the simple ``X-Platform-Signature``
(``<settings.header_prefix>Signature`` where a deployment renames the prefix).

Standard Webhooks signs ``{webhook-id}.{webhook-timestamp}.{body}`` with the secret's decoded bytes,
so receivers can refuse replays (timestamp tolerance) and de-duplicate (the id). The simple header
signs the body only, keyed with the whole secret string as shown to the tenant (``whsec_...``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
HEADER_PREFIX = "X-Platform-"  # the contract's spelling, unless settings.header_prefix maps it
SECRET_BYTES = 32  # Standard Webhooks asks for 24-64 random bytes
TOLERANCE_SECONDS = 300


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _secret_bytes(secret: str) -> bytes:
    raw = secret.removeprefix(SECRET_PREFIX)
    return base64.b64decode(raw + "==")


def platform_signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA-256 of the raw body keyed with the secret string (spec 6.1)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64>`` over ``id.timestamp.body`` (Standard Webhooks, symmetric)."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_headers(
    secret: str, msg_id: str, timestamp: int, body: bytes, header_prefix: str = HEADER_PREFIX
) -> dict[str, str]:
    """Every header a delivery carries; the timestamp is the one of this attempt."""
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, msg_id, timestamp, body),
        f"{header_prefix}Signature".lower(): platform_signature(secret, body),
    }


def verify_standard(
    secret: str, headers: dict[str, str], body: bytes, now: float, tolerance: int = TOLERANCE_SECONDS
) -> bool:
    """The receiver's check (also used by the docs and tests): signature and timestamp window."""
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, signatures = (
        lower.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature")
    )
    if not (msg_id and stamp and signatures and stamp.isdigit()):
        return False
    if abs(now - int(stamp)) > tolerance:
        return False
    expected = standard_signature(secret, msg_id, int(stamp), body)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures.split(" "))


def verify_platform(secret: str, header: str, body: bytes) -> bool:
    return hmac.compare_digest(platform_signature(secret, body), header)


def merchant_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The Agentic Commerce Protocol's ``Merchant-Signature`` of order events: ``t=<unix>,v1=<hex>``,
    HMAC-SHA256 of ``timestamp + "." + raw body`` keyed with the shared secret as written."""
    signed = str(timestamp).encode() + b"." + body
    return f"t={timestamp},v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
