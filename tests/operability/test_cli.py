"""The ``agentgate`` command as an operator uses it: one rule for the database, no empty database
made by mistake, ``--version``, list/revoke/rotate/set-plan and ``--json`` on every command."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import tomllib
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_server.foundation import data_dir
from http_facade import cli

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery staple"
ADMIN_COMMANDS = [
    ["tenants", "list"],
    ["tenants", "create", "--name", "Acme"],
    ["tenants", "set-plan", "--tenant", "Acme", "--plan", "starter"],
    ["users", "list"],
    ["keys", "list"],
    ["keys", "create", "--tenant", "Acme"],
    ["keys", "revoke", "key_x"],
    ["keys", "rotate", "key_x"],
]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment of an operator shell: this data dir, nothing else set."""
    for name in list(os.environ):
        if name.startswith("AGENTGATE_") and name != "AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION":
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    return tmp_path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> object:
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("argv", ADMIN_COMMANDS, ids=" ".join)
def test_admin_commands_refuse_a_missing_database(
    argv: list[str], data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and f"No agentgate database at {data / 'agentgate.db'}" in err
    assert "AGENTGATE_DATA_DIR" in err and "agentgate migrate" in err
    assert list(data.iterdir()) == []  # nothing created, not even the folder's files

    code, _, err = run([*argv, "--json"], capsys)
    assert code == 1 and json.loads(err)["error"]["code"] == "database_not_found"


def test_the_default_data_dir_does_not_depend_on_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AGENTGATE_DATA_DIR"}
    probe = "from agent_server.foundation.settings import Settings; print(Settings().data_dir)"
    printed = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed == str(ROOT / "var")  # a checkout: its var/, wherever the command starts

    # An installed package (no pyproject.toml beside it): the XDG data home.
    monkeypatch.setattr(data_dir, "_PROJECT_ROOT", tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir.default_data_dir() == tmp_path / "xdg" / "agentgate"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert data_dir.default_data_dir() == Path.home() / ".local" / "share" / "agentgate"


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert exited.value.code == 0 and capsys.readouterr().out == f"agentgate {version}\n"


def test_an_invalid_setting_is_one_line(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_MODE", "staging")
    code, _, err = run(["tenants", "list"], capsys)
    assert code == 2 and err.startswith("error: invalid setting AGENTGATE_MODE:") and err.count("\n") == 1


def test_a_database_of_another_version_is_refused(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["migrate"], capsys)[0] == 0
    with closing(sqlite3.connect(data / "agentgate.db")) as db, db:
        db.execute("INSERT INTO alembic_version VALUES ('0099_from_a_newer_version')")
    code, _, err = run(["keys", "list"], capsys)
    assert code == 1 and "0099_from_a_newer_version" in err and "agentgate migrate" in err


def test_lifecycle_with_json_output(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    migrated = run_json(["migrate"], capsys)
    assert migrated["database"].startswith(str(data / "agentgate.db")) and migrated["revisions"]

    tenant = run_json(["tenants", "create", "--name", "Acme", "--plan", "professional"], capsys)
    assert tenant["name"] == "Acme" and tenant["plan"] == "professional"
    assert [t["id"] for t in run_json(["tenants", "list"], capsys)] == [tenant["id"]]

    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    user = run_json(
        ["users", "create", "--tenant", "Acme", "--email", "Ops@Acme.example", "--password-stdin", "--admin"],
        capsys,
    )
    assert user["email"] == "ops@acme.example" and user["permissions"] == ["tenant:admin"]
    assert [u["email"] for u in run_json(["users", "list", "--tenant", tenant["id"]], capsys)] == [
        user["email"]
    ]

    created = run_json(["keys", "create", "--tenant", "Acme", "--name", "ci"], capsys)
    assert created["key"].startswith("sk_test_") and created["redacted"].endswith(created["key"][-4:])
    rotated = run_json(["keys", "rotate", created["id"]], capsys)
    assert (
        rotated["revoked"]["id"] == created["id"]
        and rotated["revoked"]["replaced_by"] == rotated["created"]["id"]
    )
    assert rotated["created"]["key"] != created["key"] and rotated["created"]["name"] == "ci"
    listed = run_json(["keys", "list"], capsys)
    assert [(k["id"], k["status"]) for k in listed] == [
        (created["id"], "revoked"),
        (rotated["created"]["id"], "active"),
    ]
    assert not any("key" in k for k in listed)  # a listing never shows a key

    revoked = run_json(["keys", "revoke", rotated["created"]["id"]], capsys)
    assert revoked["status"] == "revoked" and revoked["revoked_at"]
    code, out, _ = run(["keys", "revoke", rotated["created"]["id"]], capsys)
    assert code == 0 and "already revoked" in out
    code, _, err = run(["keys", "rotate", created["id"], "--json"], capsys)
    assert code == 1 and json.loads(err)["error"]["code"] == "not_found"

    code, _, err = run(["tenants", "set-plan", "--tenant", "Acme", "--plan", "enterprise"], capsys)
    assert code == 1 and "sold by negotiation" in err  # a negotiated plan is set with its contract's end
    to_enterprise = ["tenants", "set-plan", "--tenant", "Acme", "--plan", "enterprise"]
    next_year = (datetime.now(UTC) + timedelta(days=365)).date().isoformat()
    changed = run_json([*to_enterprise, "--contract-end", next_year], capsys)
    assert changed["plan"] == "enterprise" and changed["previous_plan"] == "professional"
    assert changed["contract_ends_at"] == f"{next_year}T00:00:00Z"
    code, _, err = run(["tenants", "set-plan", "--tenant", "Acme", "--plan", "gold"], capsys)
    assert code == 1 and "Unknown plan 'gold'" in err

    variables = {row["variable"] for row in run_json(["settings"], capsys)}
    assert {"AGENTGATE_DATA_DIR", "AGENTGATE_PUBLIC_BASE_URL"} <= variables


def test_text_output_for_people(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["migrate"], capsys)[0] == 0
    code, out, _ = run(["tenants", "create", "--name", "Globex", "--plan", "starter"], capsys)
    assert code == 0 and "(Globex), plan starter" in out
    code, out, err = run(["keys", "create", "--tenant", "Globex"], capsys)
    key_id, full = out.split()[1], out.splitlines()[1]
    assert code == 0 and full.startswith("sk_test_") and "only time" in err
    header, row = run(["keys", "list", "--tenant", "Globex"], capsys)[1].splitlines()
    assert header.split() == [
        "ID",
        "TENANT_ID",
        "NAME",
        "SCOPES",
        "REDACTED",
        "STATUS",
        "CREATED_AT",
        "LAST_USED_AT",
    ]
    assert row.split()[-1] == "-"  # never used
    assert row.split()[0] == key_id and "active" in row and full not in row
    code, out, _ = run(["tenants", "set-plan", "--tenant", "Globex", "--plan", "professional"], capsys)
    assert code == 0 and "plan starter -> professional" in out


def test_an_empty_postgres_database_is_refused(
    empty_postgres_url: str, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGATE_DATABASE_URL", empty_postgres_url)
    code, _, err = run(["tenants", "list"], capsys)
    assert code == 1 and "has no agentgate schema" in err and "agentgate migrate" in err
    assert empty_postgres_url.rsplit("/", 1)[1] in err and "AGENTGATE_DATABASE_URL" in err
    assert run(["migrate"], capsys)[0] == 0
    assert run_json(["tenants", "list"], capsys) == []
