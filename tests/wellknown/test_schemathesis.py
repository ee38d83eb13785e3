"""schemathesis against ``/openapi.json`` of a real uvicorn: no server error, no response that breaks
the published contract (status code, content type, body schema).

Two bounded runs (10 examples per operation): every route with a sandbox API key, and the ``/admin``
routes with an admin JWT, both made through the gateway's own provisioning functions.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agent_server.settings import Settings
from tests.conftest import BASE_URL, LiveServer

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
# 501 is the honest answer of the planned endpoints (OAuth, /agent/auth), not a crash.
CONFIG = '[checks.not_a_server_error]\nexpected-statuses = ["1XX", "2XX", "3XX", "4XX", "501"]\n'
PASSWORD = "fuzzing-password-" + uuid.uuid4().hex


@dataclass
class Fuzzed:
    server: LiveServer
    key: str | None
    jwt: str | None


async def _provision(settings: Settings) -> tuple[str, str]:
    from agent_server.gateway import provision

    tenant = f"fuzz-{uuid.uuid4().hex[:8]}"
    # A negotiated limit far above what the run sends, so the fuzzer is not only shown 429s.
    await provision.create_tenant(settings, tenant, "professional", 1_000_000)
    email = f"admin@{tenant}.example"
    await provision.create_user(settings, tenant, email, PASSWORD, admin=True)
    _, key = await provision.create_key(settings, tenant, "schemathesis", ["chat", "models"])
    return key, email


@pytest.fixture
def fuzzed(tmp_path: Path) -> Iterator[Fuzzed]:
    settings = Settings(
        data_dir=tmp_path / "data", public_base_url=BASE_URL, redis_url=None, database_url=None
    )
    key = email = None
    if importlib.util.find_spec("agent_server.gateway.provision") is not None:
        key, email = asyncio.run(_provision(settings))
    with LiveServer(settings) as server:
        jwt = None
        if email is not None:
            login = httpx.post(f"{server.url}/admin/auth/login", json={"email": email, "password": PASSWORD})
            assert login.status_code == 200, login.text
            jwt = login.json()["access_token"]
        yield Fuzzed(server, key, jwt)


def schemathesis(url: str, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """One ``st run`` in a process of its own. One worker each: CPython 3.11's ``ast.parse``, which
    hypothesis calls to describe strategies, is not safe across threads ("recursion depth mismatch")."""
    st = Path(sys.executable).with_name("st")
    command = [
        str(st),
        "--no-color",
        "run",
        f"{url}/openapi.json",
        "--checks",
        CHECKS,
        "--max-examples",
        "10",
    ]
    command += ["--seed", "20260518", "--workers", "1", "--phases", "examples,coverage,fuzzing"]
    command += ["--generation-database", "none", "--request-timeout", "10", *args]
    return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_running_service_keeps_its_openapi_contract(fuzzed: Fuzzed, tmp_path: Path) -> None:
    (tmp_path / "schemathesis.toml").write_text(CONFIG)
    url = fuzzed.server.url
    public = ["--exclude-path-regex", "^/admin"]
    if fuzzed.key:
        public += ["-H", f"Authorization: Bearer {fuzzed.key}"]
    runs = [("every route but /admin, with a sandbox key", schemathesis(url, tmp_path, *public))]
    if fuzzed.jwt:
        admin = ["--include-path-regex", "^/admin", "-H", f"Authorization: Bearer {fuzzed.jwt}"]
        runs.append(("/admin with an admin JWT", schemathesis(url, tmp_path, *admin)))
    for name, run in runs:  # both run at once, against the one server
        try:
            output, _ = run.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            run.kill()
            output, _ = run.communicate()
            pytest.fail(f"schemathesis ({name}) took too long:\n{output[-4000:]}")
        assert run.returncode == 0, f"schemathesis ({name}) failed:\n{output[-12000:]}"
        assert " passed" in output
