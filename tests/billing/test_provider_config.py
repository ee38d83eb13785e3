"""Which provider runs: production refuses the sandbox provider unless told to, and the real provider
needs its key and webhook secret; ``agentgate serve`` says so in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.deployment.checks import check_deployment
from agent_server.foundation.errors import DeploymentError
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.cli import main
from tests.conftest import running


def production(tmp_path: Path, **changes: object) -> Settings:
    wanted = {"billing_allow_sandbox_in_production": False, **changes}
    return Settings(data_dir=tmp_path, mode="production", redis_url=None, database_url=None, **wanted)


def test_production_refuses_the_sandbox_provider(tmp_path: Path) -> None:
    with pytest.raises(DeploymentError) as refused:
        create_app(production(tmp_path))
    assert "AGENTGATE_BILLING_PROVIDER=sandbox" in str(refused.value)
    assert "AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION" in str(refused.value)


async def test_production_runs_the_sandbox_provider_when_told_to(tmp_path: Path) -> None:
    async with running(create_app(production(tmp_path, billing_allow_sandbox_in_production=True))) as app:
        assert app.state.billing.provider.name == "sandbox"


def test_the_stripe_provider_needs_its_key_and_webhook_secret(tmp_path: Path) -> None:
    with pytest.raises(DeploymentError) as refused:
        check_deployment(production(tmp_path, billing_provider="stripe", stripe_api_key="sk_test_x"))
    assert "AGENTGATE_STRIPE_WEBHOOK_SECRET" in str(refused.value)
    assert "AGENTGATE_STRIPE_API_KEY" not in str(refused.value)
    configured = production(
        tmp_path, billing_provider="stripe", stripe_api_key="sk_test_x", stripe_webhook_secret="whsec_x"
    )
    check_deployment(configured)  # fine
    assert create_app(configured).state.billing.provider.name == "stripe"


def test_sandbox_mode_runs_the_sandbox_provider_by_default(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path, redis_url=None, database_url=None, billing_allow_sandbox_in_production=False
    )
    assert create_app(settings).state.billing.provider.name == "sandbox"


def test_serve_says_why_it_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AGENTGATE_MODE", "production")
    monkeypatch.setenv("AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION", "false")
    for name in ("AGENTGATE_DATABASE_URL", "AGENTGATE_REDIS_URL", "AGENTGATE_BILLING_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "--port", "1"]) == 2
    assert "error: AGENTGATE_BILLING_PROVIDER=sandbox in production mode" in capsys.readouterr().err
