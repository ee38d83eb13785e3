"""Secrets at rest: the key a first start writes is a Fernet key, and a configured key that is not
one stops the start (agent_server/foundation/secret_box.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from agent_server.foundation.secret_box import KEY_FILE, SecretBox
from agent_server.foundation.settings import Settings


def test_the_key_a_first_start_writes_is_a_fernet_key(tmp_path: Path) -> None:
    box = SecretBox.from_settings(Settings(data_dir=tmp_path, redis_url=None, database_url=None))
    written = (tmp_path / KEY_FILE).read_bytes().strip()
    assert Fernet(written).decrypt(box.encrypt("webhook secret").encode()) == b"webhook secret"
    assert SecretBox([written]).decrypt(box.encrypt("x")) == "x"


def test_a_configured_key_that_is_not_a_fernet_key_stops_the_start(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, redis_url=None, database_url=None, encryption_key="not-a-key")
    with pytest.raises(ValueError):
        SecretBox.from_settings(settings)
