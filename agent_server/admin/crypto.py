"""Secrets at rest (webhook signing secrets, connector credentials), encrypted with Fernet.

The key comes from ``AGENTGATE_ENCRYPTION_KEY`` (a Fernet key, or several separated by commas:
the first encrypts, all decrypt, which allows rotating it) or is generated once into
``data_dir/encryption.key`` (see agent_server/foundation/secret_files.py).
"""

from __future__ import annotations

from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from agent_server.foundation.errors import AgentError
from agent_server.foundation.secret_files import load_or_create
from agent_server.foundation.settings import Settings

KEY_FILE = "encryption.key"


def _key_file(data_dir: Path) -> bytes:
    return load_or_create(data_dir, KEY_FILE, Fernet.generate_key)


class SecretBox:
    def __init__(self, keys: list[bytes]) -> None:
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        configured = settings.encryption_key.get_secret_value() if settings.encryption_key else ""
        keys = [k.strip().encode() for k in configured.split(",") if k.strip()]
        return cls(keys or [_key_file(settings.data_dir)])

    def encrypt(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken as exc:
            # Never echo the token: say only that the key does not match.
            raise AgentError("A stored secret cannot be decrypted with the configured key.") from exc


def hint(secret: str) -> str:
    """What a list may show of a secret: its last four characters."""
    return "…" + secret[-4:] if len(secret) > 8 else "…"
