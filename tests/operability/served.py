"""``agentgate serve`` as a real subprocess on a free loopback port, for the logs, metrics and
trace tests: its own data dir (SQLite), its stdout and stderr in files, stopped by its PID."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.conftest import free_port, require_service

AGENTGATE = Path(sys.executable).with_name("agentgate")
START_TIMEOUT = 60.0


@dataclass
class Served:
    url: str
    data_dir: Path
    stdout: Path
    stderr: Path
    process: subprocess.Popen[bytes]

    def settings(self, **values: object) -> Settings:
        """Settings of the same database, for provisioning from the test process."""
        return Settings(data_dir=self.data_dir, database_url=None, redis_url=None, **values)  # type: ignore[arg-type]

    async def key(self, *, mode: str = "sandbox") -> str:
        """An API key (scope chat) of a new enterprise tenant with no rate limit in the way."""
        settings = self.settings(mode=mode)
        tenant = await provision.create_tenant(settings, f"ops-{uuid.uuid4().hex[:8]}", "enterprise", 10**9)
        return (await provision.create_key(settings, tenant.id, "ops", ["chat", "models"]))[1]

    def log_lines(self) -> list[str]:
        return self.stderr.read_text(encoding="utf-8", errors="replace").splitlines()


@contextmanager
def serving(tmp_path: Path, *, workers: int = 1, **env: str) -> Iterator[Served]:
    if not AGENTGATE.exists():
        require_service("agentgate", f"{AGENTGATE} is missing (install the project into this venv)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data_dir = tmp_path / "data"
    # Nothing of the test process's own configuration leaks in: the test names every setting.
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTGATE_", "OTEL_"))}
    environment.update(
        AGENTGATE_DATA_DIR=str(data_dir),
        AGENTGATE_PUBLIC_BASE_URL=url,
        AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION="true",
        PYTHONUNBUFFERED="1",
        **env,
    )
    stdout, stderr = tmp_path / "serve.out", tmp_path / "serve.err"
    args = [str(AGENTGATE), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(args, env=environment, stdout=out, stderr=err)
    served = Served(url, data_dir, stdout, stderr, process)
    try:
        _wait_ready(served)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _wait_ready(served: Served) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            pytest.fail(
                f"agentgate serve exited ({served.process.returncode}):\n{served.stderr.read_text()[-3000:]}"
            )
        try:
            if httpx.get(f"{served.url}/health/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"agentgate serve not ready after {START_TIMEOUT} s:\n{served.stderr.read_text()[-3000:]}")


async def workers_started(
    client: httpx.AsyncClient, workers: int, headers: dict[str, str] | None = None
) -> None:
    """Wait until every worker of ``serve --workers N`` runs. Ready is one worker answering; on a
    loaded machine another may still be starting. Each worker shares its counts within one
    ``AGENTGATE_METRICS_FLUSH_SECONDS`` of its start, and a scrape says how many processes it adds up."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        scrape = await client.get("/metrics/prometheus", headers=headers or {})
        found = re.search(r"^agentgate_metrics_processes (\S+)$", scrape.text, re.MULTILINE)
        if scrape.status_code == 200 and found and float(found.group(1)) == workers:
            return
        assert time.monotonic() < deadline, f"{workers} workers not all started: {scrape.text[:2000]}"
        await asyncio.sleep(0.1)


def chat_body(content: str = "Hello", **extra: object) -> dict[str, object]:
    return {"model": "agentgate-mock-small", "messages": [{"role": "user", "content": content}], **extra}
