"""Agent platforms: made by the platform administrator (CLI and admin API), credential and signing
secret shown once and stored as a digest / encrypted, their webhook URL changed, unknown or revoked
credentials refused (401)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from agent_server.commerce.tables import AgentPlatform
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.cli import main
from tests.commerce.conftest import TRAINING, VERSION, World
from tests.conftest import BASE_URL, running

BODY = {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}}


async def create_session(client: httpx.AsyncClient, credential: str, key: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {credential}", "API-Version": VERSION, "Idempotency-Key": key}
    return await client.post("/agentic_commerce/checkout_sessions", json=BODY, headers=headers)


async def test_the_admin_api_makes_lists_and_revokes_platforms(world: World) -> None:
    c, auth = world.client, world.auth("platform")
    made = await c.post(
        "/admin/platform/agent-platforms",
        json={"name": "Chat assistant", "webhook_url": "https://assistant.example/acp/events"},
        headers=auth,
    )
    assert made.status_code == 201, made.text
    platform = made.json()
    credential, secret = platform["credential"], platform["signing_secret"]
    assert credential.startswith("acp_") and len(secret) >= 32
    listed = (await c.get("/admin/platform/agent-platforms", headers=auth)).json()["data"]
    assert [p["id"] for p in listed] == [platform["id"]]
    assert credential not in json.dumps(listed) and secret not in json.dumps(listed)  # shown once
    async with world.app.state.services.db.session() as session:
        row = (await session.execute(select(AgentPlatform))).scalars().one()
    assert row.credential_digest == hashlib.sha256(credential.encode()).hexdigest()
    assert secret not in row.signing_secret_encrypted

    assert (await create_session(c, credential, "first")).status_code == 201
    member = await c.post(
        "/admin/platform/agent-platforms", json={"name": "X y"}, headers=world.auth("a_admin")
    )
    assert member.status_code == 403
    duplicate = await c.post("/admin/platform/agent-platforms", json={"name": "Chat assistant"}, headers=auth)
    assert duplicate.status_code == 409
    bad_url = await c.post(
        "/admin/platform/agent-platforms",
        json={"name": "Bad", "webhook_url": "ftp://x.example"},
        headers=auth,
    )
    assert bad_url.status_code == 400, bad_url.text

    revoked = await c.delete(f"/admin/platform/agent-platforms/{platform['id']}", headers=auth)
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    refused = await create_session(c, credential, "second")
    assert refused.status_code == 401 and refused.json()["type"] == "invalid_request"
    assert refused.json()["code"] == "invalid_credential"


def test_the_cli_makes_a_platform_whose_credential_works(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENTGATE_DATABASE_URL", raising=False)
    assert main(["migrate"]) == 0
    capsys.readouterr()
    assert main(["agent-platforms", "create", "--name", "CLI assistant", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert main(["agent-platforms", "list", "--json"]) == 0
    listed = capsys.readouterr().out
    assert made["id"] in listed and made["credential"] not in listed

    settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)

    async def use(key: str) -> int:
        async with (
            running(create_app(settings)) as app,
            httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
        ):
            return (await create_session(client, made["credential"], key)).status_code

    assert asyncio.run(use("a")) == 201
    hook = ["agent-platforms", "webhook", "CLI assistant", "--url", "https://cli.example/acp", "--json"]
    assert main(hook) == 0
    assert json.loads(capsys.readouterr().out)["webhook_url"] == "https://cli.example/acp"
    assert main(["agent-platforms", "webhook", "CLI assistant", "--url", "ftp://cli.example/"]) == 1
    assert main(["agent-platforms", "webhook", made["id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["webhook_url"] is None
    assert main(["agent-platforms", "revoke", "CLI assistant", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "revoked"
    assert asyncio.run(use("b")) == 401
    assert main(["agent-platforms", "revoke", "nobody"]) == 1
