"""Query parameters of every GET route that takes any (list routes and the rest), fuzzed over HTTP to
the real app: calendar limits (9999-12-31, 0001-01-01 and past them), empty, very long and
wrongly typed values, repeated parameters. Whatever the query, the answer is never a server error
(501, a planned endpoint, aside) and never shows a traceback.

The routes come from the app's own OpenAPI document, so a new route is fuzzed the day it exists.
Every request is authenticated as far as the route allows (an admin JWT of a platform
administrator, the dashboard session cookie), so the parameters reach the code behind the checks.
Bounded: a fixed list of values, one parameter at a time plus repeated parameters and the date
pairs (about 2,200 requests over ASGI, half a minute on the development box).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.gateway.conftest import PASSWORD, password_hash
from tests.pages.conftest import BROWSER_ACCEPT, BROWSER_UA
from tests.pages.dashboard import post_form

pytestmark = [pytest.mark.fuzz, pytest.mark.asyncio(loop_scope="module")]
BUDGET_SECONDS = 300  # the sweep fails rather than run longer on a machine that is far too slow

DATES = [
    "9999-12-31",
    "0001-01-01",
    "10000-01-01",
    "0000-00-00",
    "-0001-01-01",
    "2026-02-30",
    "2026-13-01",
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00+14:00",
    "1970-01-01",
]
VALUES = [
    *DATES,
    "",
    " ",
    "0",
    "-1",
    "1",
    "2147483648",
    "9223372036854775808",
    "-9223372036854775809",
    "1" * 400,
    "1e309",
    "NaN",
    "-inf",
    "1.5",
    "0x10",
    "true",
    "null",
    "[]",
    "{}",
    "a" * 10_000,
    "é" * 2_000,
    "%00",
    "\x00",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "\u202e\U0001f600",
]
DATE_PAIRS = [(start, end) for start in DATES[:5] for end in DATES[:5]]  # both set: no default
ALLOWED_5XX = {501}  # planned endpoints answer 501 whatever they are sent


@dataclass
class Target:
    path: str
    params: list[str]


@dataclass
class Fuzzed:
    client: httpx.AsyncClient
    targets: list[Target]
    ids: dict[str, str]

    def url(self, path: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: self.ids.get(m.group(1), "unknown"), path)

    async def get(self, path: str, params: list[tuple[str, str]]) -> httpx.Response:
        return await self.client.get(self.url(path), params=params)


def targets(document: dict[str, Any]) -> list[Target]:
    """Every GET operation with query parameters, and their names."""
    found = []
    for path, operations in sorted(document["paths"].items()):
        operation = operations.get("get")
        if operation is None:
            continue
        names = []
        for parameter in operation.get("parameters", []):
            if "$ref" in parameter:
                parameter = document["components"]["parameters"][parameter["$ref"].rsplit("/", 1)[1]]
            if parameter.get("in") == "query":
                names.append(parameter["name"])
        if names:
            found.append(Target(path, names))
    return found


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Fuzzed]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("fuzz-queries"),
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        webhook_worker=False,
        mail_worker=False,
    )
    app = create_app(settings)
    async with running(app):
        services = app.state.services
        tenant = await repo.create_tenant(services.db, services.clock.now(), "fuzz", "enterprise", 10**9)
        permissions = ["platform:admin", "tenant:admin"]
        user = repo.new_user(
            services.clock.now(), tenant.id, "fuzz@fuzz.example", await password_hash(), permissions
        )
        await repo.add_user(services.db, user)
        token = app.state.accounts.sessions.issue(user).access_token
        transport = httpx.ASGITransport(app, raise_app_exceptions=False, client=("10.9.8.7", 4321))
        headers = {"Accept": BROWSER_ACCEPT, "User-Agent": BROWSER_UA}
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers) as client:
            signed_in = await post_form(
                client, "/app/login", "/app/login", email=user.email, password=PASSWORD
            )
            assert signed_in.status_code == 303, signed_in.text[:300]
            client.headers["Authorization"] = f"Bearer {token}"
            hook = await client.post(
                "/admin/webhooks", json={"url": "http://127.0.0.1:9/fuzz", "events": ["key.rotated"]}
            )
            assert hook.status_code == 201, hook.text
            ids = {"tenant_id": tenant.id, "webhook_id": hook.json()["id"]}
            yield Fuzzed(client, targets(app.openapi()), ids)


def unsound(response: httpx.Response) -> str | None:
    """Why an answer is wrong, or None."""
    if response.status_code >= 500 and response.status_code not in ALLOWED_5XX:
        return f"{response.status_code}: {response.text[:200]}"
    if "Traceback (most recent call last)" in response.text or 'File "/' in response.text:
        return f"{response.status_code} with a traceback"
    return None


async def test_every_query_parameter_of_every_get_route(fuzzed: Fuzzed) -> None:
    assert len(fuzzed.targets) >= 25, [t.path for t in fuzzed.targets]  # the document was read
    started, failures, sent = time.monotonic(), [], 0
    for target in fuzzed.targets:
        cases: list[list[tuple[str, str]]] = []
        for name in target.params:
            cases += [[(name, value)] for value in VALUES]
            cases.append([(name, "1"), (name, "9999-12-31")])  # repeated
        if {"start", "end"} <= set(target.params):
            cases += [[("start", start), ("end", end)] for start, end in DATE_PAIRS]
        for params in cases:
            problem = unsound(await fuzzed.get(target.path, params))
            sent += 1
            if problem:
                failures.append((target.path, [(k, v[:40]) for k, v in params], problem))
        assert time.monotonic() - started < BUDGET_SECONDS, f"{sent} requests, still at {target.path}"
    assert failures == [], "\n".join(map(str, failures))
