"""The optional online breach check against a real k-anonymity range service on loopback.

The service is a small Starlette app under uvicorn in the test's loop: it answers
``GET /range/<5 hex>`` with ``SUFFIX:COUNT`` lines for the hashes it knows, padded with count-0
decoys, and can be switched to fail (500), to answer nonsense or to never answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.conftest import BASE_URL, free_port, running

ONLY_ONLINE = "violet-harbour-lantern-42"  # passes the offline rule; the service knows it
PADDED = "amber-orchard-kettle-77"  # its suffix is in the answer, as padding with count 0
STRONG = "river-candle-oak-meadow"


def sha1(password: str) -> str:
    return hashlib.sha1(password.encode()).hexdigest().upper()


@dataclass
class RangeService:
    url: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    mode: str = "ok"  # ok | error | garbage | hang
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def answer(self, request: Request) -> Response:
        prefix = request.path_params["prefix"]
        self.requests.append((request.url.path, request.headers.get("add-padding")))
        if self.mode == "hang":
            await self.release.wait()
        if self.mode == "error":
            return PlainTextResponse("internal error", status_code=500)
        if self.mode == "garbage":
            return HTMLResponse("<html><body>Down for maintenance</body></html>")
        lines = [
            f"{digest[5:]}:{count}" for digest, count in self.counts.items() if digest.startswith(prefix)
        ]
        decoys = random.Random(prefix)
        lines += [f"{decoys.getrandbits(140):035X}:0" for _ in range(200)]
        random.Random(len(lines)).shuffle(lines)
        return PlainTextResponse("\r\n".join(lines))


@pytest.fixture
async def range_service() -> AsyncIterator[RangeService]:
    service = RangeService(counts={sha1(ONLY_ONLINE): 3, sha1(PADDED): 0, sha1("password1234"): 245_000})
    app = Starlette(routes=[Route("/range/{prefix}", service.answer)])
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()  # connections wait in the backlog until uvicorn accepts them: no start-up race
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[listening]))
    service.url = f"http://127.0.0.1:{port}"
    yield service
    service.release.set()
    server.should_exit = True
    await serving


def settings_for(tmp_path: Path, service: RangeService, timeout: float = 2.0) -> Settings:
    return Settings(
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        password_breach_api_url=service.url + "/",
        password_breach_api_timeout_seconds=timeout,
        register_limit_per_email=100,
    )


async def test_registration_refuses_a_password_only_the_service_knows(
    tmp_path: Path, range_service: RangeService
) -> None:
    body = {"email": "ann@acme.example", "organisation": "Acme", "plan": "starter"}
    async with (
        running(create_app(settings_for(tmp_path, range_service))) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        refused = await client.post("/register", json={**body, "password": ONLY_ONLINE})
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert (error["code"], error["param"]) == ("PASSWORD_BREACHED", "password")
        assert "appeared in a data breach" in error["message"] and "Choose another" in error["message"]
        accepted = await client.post("/register", json={**body, "password": STRONG})
        assert accepted.status_code == 202, accepted.text
    # Only the first 5 hex digits of each SHA-1 went out, asking for padding.
    assert range_service.requests == [
        (f"/range/{sha1(ONLY_ONLINE)[:5]}", "true"),
        (f"/range/{sha1(STRONG)[:5]}", "true"),
    ]


async def test_padding_lines_with_count_zero_are_not_breaches(
    tmp_path: Path, range_service: RangeService
) -> None:
    policy = PasswordPolicy(settings_for(tmp_path, range_service))  # its own client, as the CLI has
    assert range_service.counts[sha1(PADDED)] == 0
    await policy.check(PADDED)
    assert range_service.requests == [(f"/range/{sha1(PADDED)[:5]}", "true")]
    with pytest.raises(ValidationFailed) as refused:
        await policy.check(ONLY_ONLINE)
    assert refused.value.code == "password_breached"


async def test_the_offline_list_answers_first_without_asking_the_service(
    tmp_path: Path, range_service: RangeService
) -> None:
    async with httpx.AsyncClient() as http:
        policy = PasswordPolicy(settings_for(tmp_path, range_service), lambda: http)
        with pytest.raises(ValidationFailed) as refused:
            await policy.check("password1234")
    assert refused.value.code == "password_breached" and "leaked in data breaches" in refused.value.message
    assert range_service.requests == []


@pytest.mark.parametrize("mode", ["error", "garbage", "hang"])
async def test_a_failing_service_is_skipped_with_one_warning(
    tmp_path: Path, range_service: RangeService, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    range_service.mode = mode
    settings = settings_for(tmp_path, range_service, timeout=0.3)
    async with httpx.AsyncClient() as http:
        policy = PasswordPolicy(settings, lambda: http)
        with caplog.at_level(logging.WARNING, logger="agentgate.accounts"):
            await policy.check(ONLY_ONLINE)  # fail-open: the service would have refused it
            with pytest.raises(ValidationFailed) as refused:
                await policy.check("Summer2024!!")  # the offline list still applies
    assert refused.value.code == "password_breached"
    assert len(range_service.requests) == 1
    warnings = [record.getMessage() for record in caplog.records if record.name == "agentgate.accounts"]
    assert len(warnings) == 1 and "only the offline list was checked" in warnings[0]
    assert {"error": "status 500", "garbage": "not SUFFIX:COUNT", "hang": "timed out"}[mode] in warnings[0]
    secret_forms = (ONLY_ONLINE, sha1(ONLY_ONLINE), sha1(ONLY_ONLINE)[:5], sha1(ONLY_ONLINE)[5:])
    assert not any(form in caplog.text for form in secret_forms)


async def test_an_unreachable_service_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    closed = RangeService(url=f"http://127.0.0.1:{free_port()}")  # nothing listens there
    policy = PasswordPolicy(settings_for(tmp_path, closed))
    with caplog.at_level(logging.WARNING, logger="agentgate.accounts"):
        await policy.check(ONLY_ONLINE)
    assert "ConnectError" in caplog.text and ONLY_ONLINE not in caplog.text
