"""API key format: generation, offline validation and the stored digest.

Canonical spelling (spec 2.1), exactly 48 characters::

    sk_test_ | sk_live_      8 characters, the environment (sandbox mock / live routing)
    <random>                 34 base62 characters from ``secrets`` (about 202 bits)
    <checksum>               6 base62 characters: CRC32 of <random>, zero-padded

``<random><checksum>`` is the key's 40-character *body*. The quickstart spelling is accepted too:
``sk-agentgate-<body>`` (53 characters) names the same key; its environment is the key's own.
Anything else, or a bad checksum, is refused before any cache, database or KV lookup.

Only ``sha256(body)`` is stored (keys are high-entropy, so a fast hash is right; a slow KDF would
make every request a CPU cost). The prefix carries no secret, which is why it is not hashed.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import zlib

from agent_server.foundation.ids import BASE62

ALPHABET = BASE62
PREFIXES = {"sk_test_": "test", "sk_live_": "live"}
PREFIX_OF = {environment: prefix for prefix, environment in PREFIXES.items()}
ALIAS_PREFIX = "sk-agentgate-"
RANDOM_LENGTH = 34
CHECKSUM_LENGTH = 6
BODY_LENGTH = RANDOM_LENGTH + CHECKSUM_LENGTH
KEY_LENGTH = 8 + BODY_LENGTH
_ALIAS_LENGTH = len(ALIAS_PREFIX) + BODY_LENGTH
_BODY = re.compile(f"[0-9A-Za-z]{{{BODY_LENGTH}}}")


# Every two-digit base62 string, so six digits take two divmods instead of six (this runs per request).
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]
_PAIR = len(_PAIRS)  # 62**2


def checksum(random_part: str) -> str:
    """CRC32 of the random part as 6 base62 digits (62**6 > 2**32, so it always fits)."""
    high, rest = divmod(zlib.crc32(random_part.encode()), _PAIR * _PAIR)
    middle, low = divmod(rest, _PAIR)
    return _PAIRS[high] + _PAIRS[middle] + _PAIRS[low]


def generate(environment: str) -> tuple[str, str]:
    """A new key for ``environment`` ("test" or "live"): (full key, body)."""
    random_part = "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_LENGTH))
    body = random_part + checksum(random_part)
    return PREFIX_OF[environment] + body, body


def parse(raw: str) -> tuple[str | None, str] | None:
    """(environment named by the prefix, or None for the alias spelling; body), or None when malformed."""
    size = len(raw)
    if size == KEY_LENGTH:
        environment = PREFIXES.get(raw[:8])
        if environment is None:
            return None
        body = raw[8:]
    elif size == _ALIAS_LENGTH and raw.startswith(ALIAS_PREFIX):
        environment, body = None, raw[-BODY_LENGTH:]
    else:
        return None
    if _BODY.fullmatch(body) is None or checksum(body[:RANDOM_LENGTH]) != body[RANDOM_LENGTH:]:
        return None
    return environment, body


def digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()
