"""Connectors: one generic implementation for both kinds; secrets encrypted, shown once, never listed."""

from __future__ import annotations

from cryptography.fernet import Fernet
from sqlalchemy import text

from agent_server.foundation.secret_box import SecretBox
from tests.admin.conftest import World


async def test_office_suite_configuration_and_bindings(world: World) -> None:
    c, auth, base = world.client, world.auth("a_admin"), "/admin/office_suite"
    status = (await c.get(f"{base}/managed-status", headers=auth)).json()
    assert status == {
        "kind": "office_suite",
        "configured": False,
        "managed": False,
        "enabled": False,
        "bindings": 0,
    }
    assert (await c.get(f"{base}/", headers=auth)).status_code == 404

    secret = "office-client-secret-1234"
    patched = await c.patch(
        f"{base}/", json={"tenant_domain": "alpha.example", "client_secret": secret}, headers=auth
    )
    assert patched.status_code == 200 and patched.json()["client_secret_set"] is True
    assert secret not in patched.text
    got = (await c.get(f"{base}/", headers=auth)).json()
    assert got["settings"]["tenant_domain"] == "alpha.example" and secret not in str(got)
    bad = await c.patch(f"{base}/", json={"unknown": 1}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "unknown"

    member = world.users["a_member"]
    created = await c.post(f"{base}/bindings", json={"user_id": member, "label": "laptop"}, headers=auth)
    assert created.status_code == 201
    first_secret = created.json()["secret"]
    assert (await c.post(f"{base}/bindings", json={"user_id": member}, headers=auth)).status_code == 409
    foreign = await c.post(f"{base}/bindings", json={"user_id": world.users["b_admin"]}, headers=auth)
    assert foreign.status_code == 404  # a user of another tenant looks missing
    listed = (await c.get(f"{base}/bindings", headers=auth)).json()["data"]
    assert listed[0]["user_id"] == member and listed[0]["secret_hint"] == "…" + first_secret[-4:]
    assert first_secret not in str(listed)
    rotated = (await c.post(f"{base}/bindings/{member}/rotate", json={}, headers=auth)).json()
    assert rotated["secret"] != first_secret and rotated["rotated_at"]

    # At rest every secret is ciphertext.
    async with world.app.state.services.db.engine.connect() as conn:
        dump = str((await conn.execute(text("SELECT * FROM connectors"))).all())
        dump += str((await conn.execute(text("SELECT * FROM connector_bindings"))).all())
        dump += str((await conn.execute(text("SELECT * FROM webhooks"))).all())
    assert secret not in dump and rotated["secret"] not in dump and first_secret not in dump

    assert (await c.delete(f"{base}/bindings/{member}", headers=auth)).status_code == 200
    assert (await c.delete(f"{base}/bindings/{member}", headers=auth)).status_code == 404
    assert (await c.delete(f"{base}/", headers=auth)).status_code == 200
    assert (await c.get(f"{base}/managed-status", headers=auth)).json()["configured"] is False


async def test_search_provider_auto_provision_and_keys(world: World) -> None:
    c, auth, base = world.client, world.auth("a_admin"), "/admin/search_provider"
    first = await c.post(f"{base}/auto-provision", json={}, headers=auth)
    assert (
        first.status_code == 201 and first.json()["managed"] is True and first.json()["api_key_set"] is True
    )
    again = await c.post(f"{base}/auto-provision", json={}, headers=auth)
    assert again.status_code == 200 and again.json()["provisioned"] is False
    member = world.users["a_member"]
    issued = await c.post(
        f"{base}/keys/{member}/rotate", json={}, headers=auth
    )  # rotate issues the first key
    assert issued.status_code == 200 and issued.json()["secret"]
    keys = (await c.get(f"{base}/keys", headers=auth)).json()["data"]
    assert [k["user_id"] for k in keys] == [member] and issued.json()["secret"] not in str(keys)
    assert (await c.get(f"{base}/managed-status", headers=auth)).json()["keys"] == 1
    patched = (
        await c.patch(
            f"{base}/", json={"safe_search": "strict", "api_key": "own-provider-key-123"}, headers=auth
        )
    ).json()
    assert patched["managed"] is False and patched["settings"]["safe_search"] == "strict"
    assert (await c.patch(f"{base}/", json={"safe_search": "maybe"}, headers=auth)).status_code == 400
    assert (await c.delete(f"{base}/keys/{member}", headers=auth)).status_code == 200
    assert (await c.get(f"{base}/keys", headers=auth)).json()["data"] == []


async def test_health_reports_unreadable_secrets(world: World) -> None:
    auth = world.auth("a_admin")
    health = (await world.client.get("/admin/connectors/health", headers=auth)).json()
    assert health["status"] == "ok" and {c["status"] for c in health["connectors"]} == {"not_configured"}
    await world.client.post("/admin/search_provider/auto-provision", json={}, headers=auth)
    health = (await world.client.get("/admin/connectors/health", headers=auth)).json()
    assert {c["kind"]: c["status"] for c in health["connectors"]}["search_provider"] == "ok"
    world.admin.connectors.box = SecretBox([Fernet.generate_key()])  # the encryption key was lost
    health = (await world.client.get("/admin/connectors/health", headers=auth)).json()
    assert health["status"] == "degraded"
    assert {c["kind"]: c["status"] for c in health["connectors"]}["search_provider"] == "secret_unreadable"
