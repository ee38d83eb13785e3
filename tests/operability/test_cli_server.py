"""What the CLI changes reaches a running server on the same database: a revoked or rotated key is
refused, a plan change moves the tenant's keys, the audit log shows the CLI, and a rotation's
``key.rotated`` webhook is delivered to a real receiver."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from http_facade import cli
from tests.admin import conftest as admin_fixtures
from tests.admin.conftest import Receiver
from tests.gateway import conftest as gateway_fixtures
from tests.gateway.conftest import Harness, HarnessFactory, key_headers

# Fixtures of other folders, used here by name: a real webhook receiver and the gateway harness.
receiver = admin_fixtures.receiver
make_harness = gateway_fixtures.make_harness


@pytest.fixture
def operator_env(settings, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's environment points at the harness's data dir (the rule of agent_server/foundation/data_dir.py)."""
    for name in list(os.environ):
        if name.startswith("AGENTGATE_") and name != "AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION":
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(settings.data_dir))
    return settings.data_dir


async def agentgate(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    """Run one command as its own process would (its own event loop), with --json."""
    code = await asyncio.to_thread(cli.main, [*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


async def refused(harness: Harness, key: str) -> bool:
    harness.clock.advance(1.0)  # past every process's key cache TTL
    return (await harness.client.get("/v1/models", headers=key_headers(key))).status_code == 401


async def test_revoke_and_rotate_reach_the_running_server(
    make_harness: HarnessFactory, operator_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with make_harness() as harness:
        admin = await harness.tenant("professional")
        key_id, key = await harness.key(admin)
        assert (await harness.chat(key)).status_code == 200

        rotated = await agentgate(capsys, "keys", "rotate", key_id)
        assert await refused(harness, key)
        assert (await harness.chat(rotated["created"]["key"])).status_code == 200

        await agentgate(capsys, "keys", "revoke", rotated["created"]["id"])
        assert await refused(harness, rotated["created"]["key"])

        trail = await harness.client.get("/admin/audit", headers=admin.headers)
        by_cli = [(e["action"], e["target"]) for e in trail.json()["data"] if e["actor"] == "cli"]
        assert by_cli == [("api_key.revoke", rotated["created"]["id"]), ("api_key.rotate", key_id)]


async def test_a_plan_change_reaches_the_tenants_keys(
    make_harness: HarnessFactory, operator_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with make_harness() as harness:
        admin = await harness.tenant("starter")
        _, key = await harness.key(admin)

        async def models() -> set[str]:
            harness.clock.advance(1.0)
            listed = await harness.client.get("/v1/models", headers=key_headers(key))
            return {model["id"] for model in listed.json()["data"]}

        before = await models()
        to_enterprise = ("tenants", "set-plan", "--tenant", admin.id, "--plan", "enterprise")
        next_year = (datetime.now(UTC) + timedelta(days=365)).isoformat()  # the CLI's clock is the system's
        changed = await agentgate(capsys, *to_enterprise, "--contract-end", next_year)
        assert changed["previous_plan"] == "starter" and changed["paid_plan"] is None
        assert before < await models()


async def test_a_rotation_queues_the_key_rotated_webhook(
    make_harness: HarnessFactory,
    operator_env: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with make_harness() as harness:
        admin = await harness.tenant("professional")
        key_id, _ = await harness.key(admin)
        hook = await harness.client.post(
            "/admin/webhooks", json={"url": receiver.url, "events": ["key.rotated"]}, headers=admin.headers
        )
        assert hook.status_code == 201, hook.text

        rotated = await agentgate(capsys, "keys", "rotate", key_id)
        for _ in range(100):  # the server's delivery worker polls every second
            if receiver.requests:
                break
            await asyncio.sleep(0.1)
        [received] = receiver.requests
        event = json.loads(received.body)
        assert event["type"] == "key.rotated" and event["tenant_id"] == admin.id
        assert event["data"] == {"old_key_id": key_id, "new_key_id": rotated["created"]["id"], "name": "test"}
