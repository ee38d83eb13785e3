"""The password rule on the operator paths: the bootstrap admin (AGENTGATE_ADMIN_PASSWORD) and
``agentgate users create``; and passwords already stored are never judged again (login works)."""

from __future__ import annotations

import io
import traceback
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from http_facade import cli
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

ADMIN_EMAIL = "admin@agentgate.example"


def app_settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None, **changes)


async def login(app_settings: Settings, email: str, password: str) -> int:
    async with (
        running(create_app(app_settings)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        answer = await client.post("/admin/auth/login", json={"email": email, "password": password})
        return answer.status_code


async def start_failure(settings: Settings) -> str:
    with pytest.raises(BaseException) as failed:  # an ExceptionGroup from the lifespan's task groups
        async with running(create_app(settings)):
            pass
    return "".join(traceback.format_exception(failed.value))


@pytest.mark.parametrize(
    ("password", "says"),
    [
        ("Summer2024!!", "This password is on a list of passwords leaked in data breaches"),
        ("Agentgate2024!!", "This password is built on your own details"),
        ("qwertyuiopasdf", "This password is too easy to guess"),
        ("Agentgate-Demo-Password!", "This password is published"),  # only the demo value itself, in sandbox
    ],
)
async def test_a_refused_bootstrap_password_stops_the_start(tmp_path: Path, password: str, says: str) -> None:
    refused = app_settings(tmp_path, admin_email=ADMIN_EMAIL, admin_password=password)
    assert f"AGENTGATE_ADMIN_PASSWORD: {says}" in await start_failure(refused)
    # Nothing was created: a start with an acceptable password creates the admin with it.
    accepted = app_settings(tmp_path, admin_email=ADMIN_EMAIL, admin_password="agentgate-demo-password")
    assert await login(accepted, ADMIN_EMAIL, "agentgate-demo-password") == 200
    assert await login(accepted, ADMIN_EMAIL, password) == 401


async def test_a_stored_password_is_not_judged_again_at_login(tmp_path: Path) -> None:
    settings = app_settings(tmp_path)
    async with running(create_app(settings)) as app:
        db, now = app.state.services.db, app.state.services.clock.now()
        tenant = await repo.create_tenant(db, now, "Legacy", "starter")
        legacy = await hash_password("password1234")  # set before the rule; hash_password only hashes
        await repo.add_user(db, repo.new_user(now, tenant.id, "old@legacy.example", legacy, ["tenant:admin"]))
    assert await login(settings, "old@legacy.example", "password1234") == 200


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_users_create_applies_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    for name in (
        "AGENTGATE_DATABASE_URL",
        "AGENTGATE_REDIS_URL",
        "AGENTGATE_MODE",
        "AGENTGATE_CONTENT_DIR",
        "AGENTGATE_PASSWORD_BREACH_API_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    assert run_cli(["migrate"], capsys)[0] == 0  # admin commands never create the database
    assert run_cli(["tenants", "create", "--name", "Initech", "--plan", "starter"], capsys)[0] == 0
    create = ["users", "create", "--tenant", "Initech", "--email", "ops@initech.example"]

    monkeypatch.setattr("sys.stdin", io.StringIO("iloveyou12345\n"))
    code, out, err = run_cli([*create, "--password-stdin"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("error: This password is on a list of passwords leaked") and "Choose another" in err
    code, _, err = run_cli([*create, "--password", "initech-2024!!"], capsys)
    assert code == 1 and "built on your own details" in err  # the tenant's name is the account's word

    monkeypatch.setattr("sys.stdin", io.StringIO("copper-lantern-meadow-9\n"))
    code, out, _ = run_cli([*create, "--password-stdin", "--admin"], capsys)
    assert code == 0 and "ops@initech.example" in out


def test_production_refuses_to_start_with_the_demo_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AGENTGATE_MODE", "production")
    monkeypatch.setenv("AGENTGATE_ADMIN_EMAIL", ADMIN_EMAIL)
    monkeypatch.setenv("AGENTGATE_ADMIN_PASSWORD", "agentgate-demo-password")
    code, out, err = run_cli(["migrate"], capsys)  # every command reads the settings first, serve too
    assert (code, out) == (2, "")
    assert (
        err.startswith("error: invalid setting AGENTGATE_ADMIN_PASSWORD:")
        and "published demo password" in err
    )
    with pytest.raises(ValueError, match="published demo password"):  # create_app's settings alike
        app_settings(
            tmp_path, mode="production", admin_email=ADMIN_EMAIL, admin_password="agentgate-demo-password"
        )
