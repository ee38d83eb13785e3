"""Provider events signed and checked the way Stripe does: ``Stripe-Signature: t=<unix>,v1=<hex>`` with
``v1 = HMAC-SHA256(secret, "<t>.<raw body>")``.

The header is parsed once, here, as the provider defines it: comma-separated ``key=value`` items, one
``t`` and one or more ``v1``. A header with more than one timestamp is refused: the SDK would verify
the signature against one of them and a window check could read another, so an old captured event
could pass with a fresh ``t`` beside it. The signature is then verified by the official SDK
(``stripe.WebhookSignature.verify_header``) over a header rebuilt from what was parsed, so both read
the same timestamp. The SDK compares that timestamp with the machine's clock and only refuses old
ones; the window is checked here against the service clock instead (both ways), so tests that move a
``ManualClock`` stay deterministic and a timestamp from the future is no way around the window. The
SDK (about 28 MB) is imported on first use.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from agent_server.foundation.errors import ValidationFailed

SIGNATURE_HEADER = "Stripe-Signature"
SCHEME = "v1"
MAX_HEADER = 2048  # a timestamp and a few signatures; a longer header is no provider's
_TIMESTAMP = re.compile(r"^\d{1,12}$")


@dataclass(frozen=True)
class SignatureHeader:
    timestamp: int
    signatures: tuple[str, ...]

    def canonical(self) -> str:
        return ",".join([f"t={self.timestamp}", *(f"{SCHEME}={s}" for s in self.signatures)])


def sign(payload: bytes, secret: str, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},{SCHEME}={mac}"


def _refused(why: str) -> ValidationFailed:
    return ValidationFailed(
        f"The {SIGNATURE_HEADER} header {why}.", code="invalid_signature", param=SIGNATURE_HEADER
    )


def parse_signature(header: str | None) -> SignatureHeader:
    """The header's one timestamp and its ``v1`` signatures; 400 ``invalid_signature`` otherwise."""
    if not header or len(header) > MAX_HEADER:
        raise _refused("is missing or does not match the body")
    pairs = [item.split("=", 1) for item in header.split(",") if item.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise _refused("is malformed: every item is key=value")
    # Counted with the key's spaces taken off: " t=1" is a second timestamp, not an unknown item.
    stamps = [(key, value) for key, value in pairs if key.strip() == "t"]
    if len(stamps) != 1:
        raise _refused(f"must carry exactly one timestamp t=, not {len(stamps)}")
    key, value = stamps[0]
    if key != "t" or not _TIMESTAMP.match(value):
        raise _refused("has a malformed timestamp")
    signatures = tuple(value for key, value in pairs if key == SCHEME)
    if not signatures:
        raise _refused(f"carries no {SCHEME} signature")
    return SignatureHeader(int(value), signatures)


def verified_event(
    payload: bytes, signature: str | None, secret: str, now: float, tolerance: int
) -> dict[str, Any]:
    """The event of a correctly signed body within ``tolerance`` seconds of ``now``; 400 otherwise."""
    from stripe import SignatureVerificationError, WebhookSignature

    parsed = parse_signature(signature)
    try:
        WebhookSignature.verify_header(payload, parsed.canonical(), secret, tolerance=None)
    except (SignatureVerificationError, UnicodeDecodeError):  # the SDK decodes the body as UTF-8
        raise _refused("is missing or does not match the body") from None
    if abs(now - parsed.timestamp) > tolerance:
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
