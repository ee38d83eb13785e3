"""The request id inside one process: on every log line written while a request is served (the
upstream client's retry line and the access line), passed to the upstream, rendered by both
formats; and a quiet ``agentgate migrate``."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway import provision
from agent_server.observability.logging_setup import (
    ACCESS_LOGGER,
    JsonFormatter,
    RequestContextFilter,
    TextFormatter,
)
from agent_server.storage.migrate import upgrade
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.llm.fake_upstream import FakeUpstream
from tests.operability.served import AGENTGATE

CHAT = "/v1/chat/completions"


@pytest.fixture
async def relay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> AsyncIterator[tuple[httpx.AsyncClient, str, FakeUpstream]]:
    """A production app relaying to a real upstream on loopback, the access log on, records captured
    through the same filter the configured handler has."""
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestContextFilter())
    with FakeUpstream() as upstream:
        settings = Settings(
            mode="production",
            data_dir=tmp_path,
            public_base_url=BASE_URL,
            redis_url=None,
            database_url=None,
            upstreams=[
                UpstreamConfig(
                    name="up",
                    base_url=upstream.base_url,
                    api_key=SecretStr("sk-up"),
                    models={"gpt-4o-mini": "m1"},
                )
            ],
            llm_retry_backoff_seconds=0.01,
        )
        upgrade(settings)
        tenant = await provision.create_tenant(settings, "logged", "enterprise", 10**9)
        _, key = await provision.create_key(settings, tenant.id, "logged", ["chat"])
        app: FastAPI = create_app(settings)
        async with (
            running(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c,
        ):
            yield c, key, upstream


async def test_every_line_of_a_request_carries_its_id_and_the_upstream_gets_it(
    relay: tuple[httpx.AsyncClient, str, FakeUpstream], caplog: pytest.LogCaptureFixture
) -> None:
    client, key, upstream = relay
    upstream.script.fail_times = 1  # one 500, then the retry answers: a log line inside the request
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
    answer = await client.post(
        CHAT, json=body, headers={"Authorization": f"Bearer {key}", "X-Request-Id": "req-42"}
    )
    assert answer.status_code == 200 and answer.headers["X-Request-Id"] == "req-42"
    assert [h["x-request-id"] for h in upstream.headers] == ["req-42", "req-42"]  # the try and its retry

    retry = [r for r in caplog.records if r.name == "agentgate.llm" and "retry" in r.getMessage()]
    access = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert retry and access
    assert {r.request_id for r in [*retry, *access]} == {"req-42"}  # type: ignore[attr-defined]
    assert access[0].fields["status"] == 200 and access[0].fields["path"] == CHAT  # type: ignore[attr-defined]

    line = json.loads(JsonFormatter().format(access[0]))
    assert line["request_id"] == "req-42" and line["logger"] == ACCESS_LOGGER and line["status"] == 200
    assert line["pid"] == os.getpid() and "trace_id" not in line  # traces are off
    text = TextFormatter().format(retry[0])
    assert " INFO agentgate.llm [req-42] llm upstream up: " in text
    # Outside a request, no id.
    idle = logging.LogRecord("agentgate", logging.INFO, __file__, 1, "idle", None, None)
    RequestContextFilter().filter(idle)
    assert "request_id" not in json.loads(JsonFormatter().format(idle))


def test_migrate_is_quiet_unless_debug_is_asked_for(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGATE_")}

    def migrate(data_dir: Path, **env: str) -> str:
        done = subprocess.run(
            [str(AGENTGATE), "migrate"],
            env={**environment, "AGENTGATE_DATA_DIR": str(data_dir), **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stderr

    assert "alembic" not in migrate(tmp_path / "quiet")
    assert "alembic.runtime.migration" in migrate(tmp_path / "verbose", AGENTGATE_LOG_LEVEL="DEBUG")
