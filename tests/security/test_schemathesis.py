"""schemathesis over the whole ``/openapi.json`` of a real uvicorn, with every check: a 5xx, a status
code or response the document does not declare, a wrong ``Allow``, a schema-valid request refused
(beyond the business rules a schema cannot state) or a schema-violating one accepted fails the test.

One bounded run (``MAX_EXAMPLES`` cases per operation, phases examples, coverage, fuzzing and the
stateful links the document declares or schemathesis infers), authenticated per operation as the
document says: the tenant API key where it asks for ``apiKeyBearer``, an admin JWT where it asks for
``adminJWT``. A few minutes; marked ``fuzz``. On a failure the message lists each failing check
with its operations; schemathesis' whole report is in ``schemathesis-output.txt`` beside it (the
test's tmp dir, named in the message).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from agent_server.storage.db import Database
from tests.conftest import BASE_URL, LiveServer

pytestmark = pytest.mark.fuzz
MAX_EXAMPLES = 10
SEED = 20260518
PASSWORD = "fuzzing-password-" + uuid.uuid4().hex
# Operations that end the session every other admin operation uses: covered by the account tests.
SESSION_ENDERS = "^/admin/(auth/(logout|password)|membership)$"
CONFIG = """
[checks.not_a_server_error]
# 501 is the honest answer of a billing provider without a portal (docs/billing.md), not a crash.
expected-statuses = ["1XX", "2XX", "3XX", "4XX", "501"]

[checks.positive_data_acceptance]
# 400: a business rule no schema states (an unknown model, an expired link, a taken name).
expected-statuses = ["2XX", "3XX", 400, 401, 403, 404, 409, 429]

[checks.negative_data_rejection]
# schemathesis' own list plus 413. To break a maxLength it sends a string of escaped characters
# over the 1 MiB body limit, and the edge refuses the body before anything reads it: a 413, which
# the document declares on every operation with a body, is that rejection.
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5XX"]

[[operations]]
# The sign-in endpoints (docs/oauth.md) answer OAuth's errors (400, 401) and the identity checks
# (401, 403) to bodies a schema cannot tell apart from good ones.
include-path-regex = "^/(oauth/(authorize|token|register|revoke)|agent/auth)$"
checks.positive_data_acceptance.expected-statuses = ["2XX", "3XX", 400, 401, 403, 404, 409, 429, 501]

[[operations]]
# The pages for people send a visitor without a session to the sign-in page (303) before they
# read any field: an answer to the missing session, like the 401 of the API.
include-path-regex = "^/app"
checks.negative_data_rejection.expected-statuses = [303, 400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 429]
"""


@dataclass
class Fuzzed:
    server: LiveServer
    key: str
    jwt: str


async def _admin(settings: Settings) -> str:
    """A platform administrator of an enterprise tenant with no practical rate limit."""
    db = Database(settings)
    try:
        now = 0.0
        tenant = await repo.create_tenant(db, now, f"fuzz-{uuid.uuid4().hex[:8]}", "enterprise", 10**9)
        email = f"admin@{tenant.name}.example"
        permissions = ["platform:admin", "tenant:admin"]
        await repo.add_user(
            db, repo.new_user(now, tenant.id, email, await hash_password(PASSWORD), permissions)
        )
        return email
    finally:
        await db.engine.dispose()


@pytest.fixture
def fuzzed(tmp_path: Path) -> Iterator[Fuzzed]:
    settings = Settings(
        data_dir=tmp_path / "data",
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        webhook_worker=False,  # no deliveries to the addresses the fuzzer registers
        register_limit_per_ip=100_000,  # the fuzzer should meet the contract, not only 429s
        register_limit_per_email=100_000,
        csp_reports_per_ip_per_hour=100_000,
    )
    with LiveServer(settings) as server:  # its start creates the schema
        email = asyncio.run(_admin(settings))
        login = httpx.post(f"{server.url}/admin/auth/login", json={"email": email, "password": PASSWORD})
        assert login.status_code == 200, login.text
        jwt = login.json()["access_token"]
        created = httpx.post(
            f"{server.url}/admin/api-keys",
            json={"name": "schemathesis", "scopes": ["chat", "embeddings", "models"]},
            headers={"Authorization": f"Bearer {jwt}"},
        )
        assert created.status_code == 201, created.text
        yield Fuzzed(server, created.json()["key"], jwt)


def _findings(report: Path, output: str) -> str:
    """One line per failing check with the operations it failed on, from the run's JSON report."""
    if not report.exists():  # the run stopped before it could write one (a schema loading error)
        return output[-3000:]
    document = json.loads(report.read_text())
    lines = [
        f"- {group['code']} {group['title']} ({group['count']}): {', '.join(group['operations'])}"
        for group in document["failures"]
    ]
    lines += [f"- error: {error['title']} ({error['count']})" for error in document["errors"]]
    return "\n".join([*lines, _statistics(report)])


def _statistics(report: Path) -> str:
    """The size and time of the run, from its JSON report."""
    if not report.exists():
        return "schemathesis wrote no report"
    document = json.loads(report.read_text())
    cases, operations = document["test_cases"], document["operations"] or {}
    return (
        f"schemathesis: {operations.get('tested')} operations, {cases['generated']} cases, "
        f"{cases['unique_failures']} unique failures, {cases['errored']} errors, "
        f"in {document['running_time']:.1f}s"
    )


def test_the_running_service_keeps_its_openapi_contract(fuzzed: Fuzzed, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        CONFIG
        + f'\n[auth.openapi.apiKeyBearer]\nbearer = "{fuzzed.key}"\n'
        + f'\n[auth.openapi.adminJWT]\nbearer = "{fuzzed.jwt}"\n'
    )
    report = tmp_path / "schemathesis-report.json"
    command = [
        str(Path(sys.executable).with_name("st")),
        "--no-color",
        f"--config-file={config}",
        "run",
        f"{fuzzed.server.url}/openapi.json",
        "--checks=all",
        f"--max-examples={MAX_EXAMPLES}",
        f"--seed={SEED}",
        "--workers=1",  # CPython 3.11's ast.parse (hypothesis) is not safe across threads
        "--phases=examples,coverage,fuzzing,stateful",
        "--generation-database=none",
        "--request-timeout=10",
        f"--exclude-path-regex={SESSION_ENDERS}",
        "--report=json",
        f"--report-json-path={report}",
    ]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    # The whole report is too long for an assertion message: keep it in a file, name it in the message.
    full = tmp_path / "schemathesis-output.txt"
    full.write_text(output)
    print(_statistics(report))  # shown with -rP or -s: the size and time of the run
    assert run.returncode == 0, (
        f"schemathesis found differences (full report: {full}):\n{_findings(report, output)}"
    )
    assert "No issues found" in output or " passed" in output
