"""No plaintext API key in the database, the logs or any list response; only its digest is stored."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_server.gateway import keys
from tests.gateway.conftest import Harness


def database_bytes(data_dir: Path) -> bytes:
    files = sorted(data_dir.glob("agentgate.db*"))  # the database, its WAL and shared-memory files
    assert files
    return b"".join(path.read_bytes() for path in files)


async def test_no_plaintext_key_in_database_logs_or_lists(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="sqlalchemy.engine")  # SQLAlchemy pins its loggers to WARN
    admin = await harness.tenant()
    key_id, key = await harness.key(admin)
    body = key.removeprefix("sk_test_")
    assert (await harness.chat(key)).status_code == 200
    assert (await harness.chat(key, stream=True)).status_code == 200
    rotated = await harness.client.post("/admin/keys/rotate", json={"key_id": key_id}, headers=admin.headers)
    new_key = rotated.json()["key"]
    assert (await harness.chat(new_key)).status_code == 200
    assert (await harness.chat(key)).status_code == 401
    listed = await harness.client.get("/admin/api-keys", headers=admin.headers)
    usage = await harness.client.get("/admin/usage", headers=admin.headers)

    secrets = [key, body, new_key, new_key[8:]]
    logged = "\n".join(record.getMessage() for record in caplog.records) + caplog.text
    stored = database_bytes(harness.gateway.services.settings.data_dir)
    # The capture really saw the traffic: SQL statements with their parameters (the digest among them).
    assert any(r.name.startswith("sqlalchemy.engine") for r in caplog.records)
    assert keys.digest(body) in logged
    for secret in secrets:
        assert secret not in logged
        assert secret.encode() not in stored
        assert secret not in listed.text and secret not in usage.text
    assert keys.digest(body).encode() in stored  # what is stored instead
