"""Start-up checks of a deployment (docs/deployment.md): per-host generated secrets with a shared
database, and several workers without Redis."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_server.deployment.checks import check_deployment
from agent_server.foundation.errors import DeploymentError
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.cli import main

SHARED = "postgresql://agentgate@db.internal:5432/agentgate"
SECRETS = {
    "jwt_secret": "j" * 40,
    "chat_token_secret": "c" * 40,
    "encryption_key": "c2NhbGUtdGVzdC1lbmNyeXB0aW9uLWtleS0zMmJ5dGU=",
}


def test_production_on_a_shared_database_refuses_generated_secrets(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, mode="production", database_url=SHARED, redis_url=None)
    with pytest.raises(DeploymentError) as refused:
        create_app(settings)
    for variable in ("AGENTGATE_JWT_SECRET", "AGENTGATE_CHAT_TOKEN_SECRET", "AGENTGATE_ENCRYPTION_KEY"):
        assert variable in str(refused.value)
    check_deployment(settings.model_copy(update=_secrets()))  # all three set: fine


def test_sandbox_on_a_shared_database_only_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(data_dir=tmp_path, database_url=SHARED, redis_url="redis://127.0.0.1:1/0")
    with caplog.at_level(logging.WARNING, logger="agentgate.deployment"):
        check_deployment(settings)
    assert "AGENTGATE_JWT_SECRET" in caplog.text


def test_a_single_host_keeps_its_generated_secrets(tmp_path: Path) -> None:
    check_deployment(Settings(data_dir=tmp_path, mode="production", database_url=None, redis_url=None))


def test_several_workers_need_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENTGATE_REDIS_URL", raising=False)
    monkeypatch.delenv("AGENTGATE_DATABASE_URL", raising=False)
    assert main(["serve", "--workers", "2"]) == 2  # refused before anything starts
    assert "AGENTGATE_REDIS_URL" in capsys.readouterr().err


def _secrets() -> dict[str, object]:
    from pydantic import SecretStr

    return {name: SecretStr(value) for name, value in SECRETS.items()}
