"""Secrets at rest (webhook signing secrets, connector credentials), encrypted with Fernet.

The key comes from ``AGENTGATE_ENCRYPTION_KEY`` (a Fernet key, or several separated by commas:
the first encrypts, all decrypt, which allows rotating it) or is generated once into
``data_dir/encryption.key`` (see agent_server/foundation/secret_files.py).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from agent_server.foundation.errors import AgentError
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.secret_files import load_or_create
from agent_server.foundation.settings import Settings

# Loaded at the first secret encrypted or read: cryptography costs a process ~9 MB (docs/performance.md).
fernet = lazy_module("cryptography.fernet")
KEY_FILE = "encryption.key"


def _new_key() -> bytes:
    """A Fernet key, as ``Fernet.generate_key`` makes it (32 random bytes, URL-safe base64): a first
    start need not load cryptography for it; tests/foundation check Fernet accepts it."""
    return base64.urlsafe_b64encode(os.urandom(32))


def _key_file(data_dir: Path) -> bytes:
    return load_or_create(data_dir, KEY_FILE, _new_key)


class SecretBox:
    def __init__(self, keys: list[bytes]) -> None:
        self._keys = keys
        self._built: Any = None  # the MultiFernet, at first use

    @property
    def _fernet(self) -> Any:
        if self._built is None:
            self._built = fernet.MultiFernet([fernet.Fernet(key) for key in self._keys])
        return self._built

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        configured = settings.encryption_key.get_secret_value() if settings.encryption_key else ""
        keys = [k.strip().encode() for k in configured.split(",") if k.strip()]
        if not keys:
            return cls([_key_file(settings.data_dir)])
        box = cls(keys)
        _ = box._fernet  # a configured key that is not a Fernet key stops the start, not a later request
        return box

    def encrypt(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except fernet.InvalidToken as exc:
            # Never echo the token: say only that the key does not match.
            raise AgentError("A stored secret cannot be decrypted with the configured key.") from exc


def hint(secret: str) -> str:
    """What a list may show of a secret: its last four characters."""
    return "…" + secret[-4:] if len(secret) > 8 else "…"
