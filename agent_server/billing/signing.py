"""Provider events signed and checked the way Stripe does: ``Stripe-Signature: t=<unix>,v1=<hex>`` with
``v1 = HMAC-SHA256(secret, "<t>.<raw body>")``.

Both adapters check with the official SDK (``stripe.WebhookSignature.verify_header``). The SDK compares
the timestamp with the machine's clock and only refuses old ones; the window is checked here against
the service clock instead (both ways), so tests that move a ``ManualClock`` stay deterministic and a
timestamp from the future is no way around the window. The SDK (about 28 MB) is imported on first use.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

from agent_server.errors import ValidationFailed

SIGNATURE_HEADER = "Stripe-Signature"
_TIMESTAMP = re.compile(r"(?:^|,)\s*t=(\d{1,12})\s*(?:,|$)")


def sign(payload: bytes, secret: str, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verified_event(
    payload: bytes, signature: str | None, secret: str, now: float, tolerance: int
) -> dict[str, Any]:
    """The event of a correctly signed body within ``tolerance`` seconds of ``now``; 400 otherwise."""
    from stripe import SignatureVerificationError, WebhookSignature

    try:
        WebhookSignature.verify_header(payload, signature, secret, tolerance=None)
    except (SignatureVerificationError, UnicodeDecodeError):  # the SDK decodes the body as UTF-8
        raise ValidationFailed(
            f"The {SIGNATURE_HEADER} header is missing or does not match the body.",
            code="invalid_signature",
            param=SIGNATURE_HEADER,
        ) from None
    signed_at = _TIMESTAMP.search(signature or "")
    if signed_at is None or abs(now - int(signed_at.group(1))) > tolerance:
        raise ValidationFailed(
            f"The event was signed more than {tolerance} s from now; it is refused as a possible replay.",
            code="timestamp_outside_tolerance",
            param=SIGNATURE_HEADER,
        )
    try:
        event = json.loads(payload)
    except ValueError:
        event = None
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("id"), str)
        or not isinstance(event.get("type"), str)
    ):
        raise ValidationFailed(
            "The event body is not a provider event object.", code="invalid_payload", param="body"
        )
    return event
