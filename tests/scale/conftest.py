"""Scale-out harness: real ``agentgate serve`` and ``agentgate worker`` processes on loopback that
share one fresh PostgreSQL database and a private ``redis-server`` (started here, on a free port,
without persistence, so a test may stop and restart it).

Every process is started with ``subprocess.Popen``, waited for on ``/health/ready`` and stopped by
its PID in teardown (SIGTERM, then SIGKILL). Each server gets a data dir of its own, so nothing can
lean on files shared between processes: the shared secrets come from the environment, as
docs/deployment.md requires. Without PostgreSQL or redis-server the tests skip (fail with CI=true).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from tests.conftest import free_port, fresh_database, require_service

AGENTGATE = Path(sys.executable).with_name("agentgate")
ADMIN_EMAIL = "ops@scale.example"
ADMIN_PASSWORD = "scale-test-admin-password"
START_TIMEOUT = 60.0
# Generous public limits: every request of these tests comes from 127.0.0.1.
BASE_ENV = {
    "AGENTGATE_MODE": "sandbox",
    "AGENTGATE_LOG_LEVEL": "WARNING",
    "AGENTGATE_JWT_SECRET": "scale-test-jwt-secret-" + "x" * 40,
    "AGENTGATE_CHAT_TOKEN_SECRET": "scale-test-chat-token-secret",
    "AGENTGATE_ENCRYPTION_KEY": "c2NhbGUtdGVzdC1lbmNyeXB0aW9uLWtleS0zMmJ5dGU=",  # a Fernet key
    "AGENTGATE_ADMIN_EMAIL": ADMIN_EMAIL,
    "AGENTGATE_ADMIN_PASSWORD": ADMIN_PASSWORD,
    "AGENTGATE_RATE_LIMIT_WINDOW_SECONDS": "3600",  # tests align to an hour: no window boundary
    "AGENTGATE_SITE_CHAT_LIMIT": "100000",
    "AGENTGATE_SITE_ASK_LIMIT": "100000",
    "AGENTGATE_SITE_JOBS_LIMIT": "100000",
    "AGENTGATE_SITE_FORMS_LIMIT": "100000",
    "AGENTGATE_CHAT_TOKEN_MIN_AGE_SECONDS": "0",
    "AGENTGATE_JOB_LEASE_SECONDS": "4",  # orphaned jobs come back within seconds
    "AGENTGATE_HTTP_KEEPALIVE_SECONDS": "60",  # above the clients' 5 s (see client() below)
    "PYTHONUNBUFFERED": "1",
}


class Proc:
    """One child process with its log file; stopped by PID, never by name."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name, self.args, self.env = name, args, env
        self.log_path = log_dir / f"{name}.log"
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        log = self.log_path.open("ab")
        self.popen = subprocess.Popen(self.args, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to flush or clean up."""
        if self.alive:
            assert self.popen is not None
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def stop(self, timeout: float = 15.0) -> None:
        if not self.alive:
            return
        assert self.popen is not None
        self.popen.terminate()
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class RedisServer(Proc):
    def __init__(self, log_dir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        super().__init__(f"redis-{self.port}", args, dict(os.environ), log_dir)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        super().start()
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=0.2).ping()
                return self
            except redis.RedisError:
                if time.monotonic() > deadline or not self.alive:
                    self.stop()
                    raise RuntimeError(f"redis-server did not start:\n{self.log_tail()}") from None
                time.sleep(0.05)


class Server(Proc):
    def __init__(self, name: str, env: dict[str, str], log_dir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**env, "AGENTGATE_PUBLIC_BASE_URL": self.url}
        args = [str(AGENTGATE), "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        super().__init__(name, args, env, log_dir)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive:
                raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/health/ready", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout} s:\n{self.log_tail()}")


@dataclass
class Deployment:
    """The shared environment of one test module and the processes it started."""

    env: dict[str, str]
    settings: Settings  # the same configuration, for provisioning and checks from the test process
    redis: RedisServer
    log_dir: Path
    procs: list[Proc] = field(default_factory=list)

    def server(self, name: str, port: int | None = None, **env: str) -> Server:
        """Start a server (not waiting for it: start several, then ``wait_ready`` each)."""
        data_dir = self.log_dir / f"data-{name}-{uuid.uuid4().hex[:6]}"
        server = Server(name, {**self.env, "AGENTGATE_DATA_DIR": str(data_dir), **env}, self.log_dir, port)
        self.procs.append(server.start())
        return server

    def worker(self, name: str = "worker", **env: str) -> Proc:
        data_dir = self.log_dir / f"data-{name}"
        args = [str(AGENTGATE), "worker"]
        proc = Proc(name, args, {**self.env, "AGENTGATE_DATA_DIR": str(data_dir), **env}, self.log_dir)
        self.procs.append(proc.start())
        return proc

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.redis.stop()


@pytest.fixture(scope="module")
def scale_env() -> dict[str, str]:
    """Extra environment of a module's processes; a module overrides this fixture."""
    return {}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, scale_env: dict[str, str]) -> Iterator[Deployment]:
    if not (shutil.which("redis-server") or Path("/usr/bin/redis-server").exists()):
        require_service("redis-server", "the redis-server binary is not installed")
    if not AGENTGATE.exists():
        require_service("agentgate", f"{AGENTGATE} is missing (install the project into this venv)")
    database = fresh_database("agentgate_scale")
    database_url = next(database)
    log_dir = tmp_path_factory.mktemp("scale")
    try:
        redis_server = RedisServer(log_dir).start()
    except BaseException:
        next(database, None)  # drop the database
        raise
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGATE_")}
    env = {
        **inherited,
        **BASE_ENV,
        "AGENTGATE_DATABASE_URL": database_url,
        "AGENTGATE_REDIS_URL": redis_server.url,
        **scale_env,
    }
    settings_env = {
        k.removeprefix("AGENTGATE_").lower(): v for k, v in env.items() if k.startswith("AGENTGATE_")
    }
    settings = Settings(**{**settings_env, "data_dir": log_dir / "data-tests"})
    deployment = Deployment(env, settings, redis_server, log_dir)
    try:
        yield deployment
    finally:
        deployment.close()
        next(database, None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report carries the end of every process log of its deployment."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    deployment = getattr(item, "funcargs", {}).get("deployment")
    if report.when == "call" and report.failed and isinstance(deployment, Deployment):
        for proc in [*deployment.procs, deployment.redis]:
            state = "running" if proc.alive else f"exited {proc.popen and proc.popen.returncode}"
            report.sections.append((f"{proc.name} ({state}), end of its log", proc.log_tail(60)))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# The servers keep an idle connection for a minute (AGENTGATE_HTTP_KEEPALIVE_SECONDS), the clients
# for httpx's 5 s: a client never sends on a connection its server is closing, even when a loaded
# machine stalls a process for seconds. With uvicorn's own 5 s that happened once (the timer fired
# before the waiting request was read: an empty ReadError); a new connection per request instead
# met connect delays of 3 s under load. docs/deployment.md gives the same advice for a load
# balancer in front of the servers.
def client(server: Server, **kwargs: object) -> httpx.AsyncClient:
    options = {"timeout": 30, **kwargs}
    return httpx.AsyncClient(base_url=server.url, **options)  # type: ignore[arg-type]


async def admin_token(server: Server) -> str:
    """A JWT of the bootstrap admin (tenant Demo, plan professional), from ``server``."""
    async with client(server) as c:
        response = await c.post("/admin/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


async def align_to_window(window: float, margin: float = 20.0) -> None:
    """Wait for the next fixed window when fewer than ``margin`` seconds are left of this one."""
    import asyncio

    left = window - time.time() % window
    if left < margin:
        await asyncio.sleep(left + 0.2)
