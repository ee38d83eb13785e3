"""First-start bootstrap (admin, demo tenant, demo key printed once) and the provisioning CLI."""

from __future__ import annotations

import io
import re
import traceback
from pathlib import Path

import pytest

from http_facade import cli
from tests.gateway.conftest import PASSWORD, HarnessFactory, key_headers

ADMIN = {"admin_email": "Admin@Demo.example", "admin_password": "demo-admin-password"}
KEY = re.compile(r"sk_(?:test|live)_[0-9A-Za-z]{40}")


async def test_first_start_prints_the_demo_key_once(
    make_harness: HarnessFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    async with make_harness(**ADMIN) as first:
        printed = capsys.readouterr().out
        keys = KEY.findall(printed)
        assert len(set(keys)) == 1 and "admin@demo.example" in printed and "Demo (ten_" in printed
        assert (await first.client.get("/v1/models", headers=key_headers(keys[0]))).status_code == 200
        token = await first.login("admin@demo.example", ADMIN["admin_password"])
        listed = await first.client.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
        assert [k["name"] for k in listed.json()["data"]] == ["demo"]
    async with make_harness(**ADMIN):
        again = capsys.readouterr().out
        assert not KEY.search(again)
        assert "printed at first start" in again and "agentgate keys create --tenant ten_" in again


async def test_production_bootstrap_creates_the_admin_and_prints_no_key(
    make_harness: HarnessFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    async with make_harness(mode="production", **ADMIN) as harness:
        assert not KEY.search(capsys.readouterr().out)
        token = await harness.login("admin@demo.example", ADMIN["admin_password"])
        claims_response = await harness.client.get(
            "/admin/api-keys", headers={"Authorization": f"Bearer {token}"}
        )
        assert claims_response.json()["data"] == []


async def test_a_too_short_admin_password_stops_the_start(make_harness: HarnessFactory) -> None:
    with pytest.raises(BaseException) as failed:  # wrapped in an ExceptionGroup by the lifespan's task groups
        async with make_harness(admin_email="a@b.example", admin_password="short"):
            pass
    assert "AGENTGATE_ADMIN_PASSWORD: The password needs at least 12" in "".join(
        traceback.format_exception(failed.value)
    )


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_creates_tenant_user_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    for name in ("AGENTGATE_DATABASE_URL", "AGENTGATE_REDIS_URL", "AGENTGATE_MODE", "AGENTGATE_CONTENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert run_cli(["migrate"], capsys)[0] == 0  # admin commands never create the database
    code, out, _ = run_cli(["tenants", "create", "--name", "Acme", "--plan", "professional"], capsys)
    assert code == 0 and re.search(r"tenant ten_\w+ \(Acme\), plan professional", out)
    assert run_cli(["tenants", "create", "--name", "Acme", "--plan", "starter"], capsys)[0] == 1
    assert "Unknown plan" in run_cli(["tenants", "create", "--name", "X", "--plan", "gold"], capsys)[2]

    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    code, out, _ = run_cli(
        ["users", "create", "--tenant", "Acme", "--email", "ops@acme.example", "--password-stdin", "--admin"],
        capsys,
    )
    assert code == 0 and "tenant:admin" in out
    code, _, err = run_cli(
        ["users", "create", "--tenant", "Acme", "--email", "x@acme.example", "--password", "short"], capsys
    )
    assert code == 1 and "12 characters" in err

    code, out, err = run_cli(
        ["keys", "create", "--tenant", "Acme", "--scopes", "chat,models", "--name", "ci"], capsys
    )
    assert code == 0 and "only time" in err
    assert len(KEY.findall(out)) == 1 and KEY.findall(out)[0].startswith("sk_test_")
    code, _, err = run_cli(["keys", "create", "--tenant", "Acme", "--scopes", "chat,admin"], capsys)
    assert code == 1 and "plan allows only" in err
    assert run_cli(["keys", "create", "--tenant", "Nobody"], capsys)[0] == 1


async def test_cli_made_key_and_user_work_on_the_server(make_harness: HarnessFactory) -> None:
    from agent_server.gateway import provision

    async with make_harness() as harness:
        settings = harness.gateway.services.settings
        tenant = await provision.create_tenant(settings, "Globex", "starter")
        await provision.create_user(settings, tenant.id, "ops@globex.example", PASSWORD, admin=True)
        _, key = await provision.create_key(settings, "Globex", "cli", ["chat"])
        assert (await harness.chat(key)).status_code == 200
        token = await harness.login("ops@globex.example")
        listed = await harness.client.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
        assert [k["name"] for k in listed.json()["data"]] == ["cli"]
