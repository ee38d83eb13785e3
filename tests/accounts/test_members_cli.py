"""``agentgate users create --role``: the operator gives a new user a role, which the admin API then
honours; ``--admin`` is ``--role admin``; an unknown role is refused by the argument parser."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from http_facade import cli
from tests.accounts.conftest import PASSWORD


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("AGENTGATE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))
    return tmp_path


def create(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    email = f"u{len(extra)}-{'-'.join(extra).strip('-')}@acme.example"
    code = cli.main(
        ["users", "create", "--tenant", "Acme", "--email", email, "--password-stdin", *extra, "--json"]
    )
    captured = capsys.readouterr()
    return code, captured.out or captured.err


def test_users_create_takes_a_role(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["migrate"]) == 0
    assert cli.main(["tenants", "create", "--name", "Acme", "--plan", "professional"]) == 0
    capsys.readouterr()
    for extra, role, permissions in (
        (("--role", "developer"), "developer", []),
        (("--role", "owner"), "owner", ["tenant:admin"]),
        (("--admin",), "admin", ["tenant:admin"]),
        ((), None, []),
    ):
        code, out = create(monkeypatch, capsys, *extra)
        assert code == 0, out
        user = json.loads(out)
        assert (user["role"], user["permissions"]) == (role, permissions), extra
    with pytest.raises(SystemExit):  # argparse: not one of the roles
        create(monkeypatch, capsys, "--role", "superuser")
    with pytest.raises(SystemExit):  # --admin and --role exclude each other
        create(monkeypatch, capsys, "--admin", "--role", "viewer")
    assert cli.main(["users", "list", "--tenant", "Acme"]) == 0
    listed = capsys.readouterr().out
    assert "ROLE" in listed.splitlines()[0] and "developer" in listed
