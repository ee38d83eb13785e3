"""``make run`` as a new user meets it: the port it is given, documents that say that port, a banner
printed after the bind with the demo login and the dashboard at ``localhost``, a restart that says
how to make another key with a command that works as printed, one clear line for a busy port, and
an install of the runtime dependencies only that says it is installing."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_server.gateway.bootstrap import DEMO_PASSWORD
from tests.conftest import free_port
from tests.gateway import conftest as gateway_fixtures
from tests.gateway.conftest import HarnessFactory
from wellknown import catalog, oauth
from wellknown.mcp import CARD_PATHS

ROOT = Path(__file__).resolve().parents[2]
AGENTGATE = ROOT / ".venv" / "bin" / "agentgate"
DOCUMENTS = [
    catalog.CATALOG_PATH,
    CARD_PATHS[0],
    "/.well-known/agent-card.json",
    oauth.PROTECTED_RESOURCE_PATH,
]
make_harness = gateway_fixtures.make_harness  # the fixture, used by name


def operator_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGATE_")}
    return {**env, "AGENTGATE_DATA_DIR": str(data_dir)}


def read_until(process: subprocess.Popen[str], marker: str, timeout: float = 60) -> list[str]:
    """Lines of stdout up to the one containing ``marker`` (fails on exit or timeout)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            pytest.fail(f"the server stopped: {lines}")
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    pytest.fail(f"no {marker!r} within {timeout} s: {lines}")


def start_make_run(data_dir: Path, port: int) -> subprocess.Popen[str]:
    """``make run PORT=<port>``, its install step taken as done (-o: the venv of this checkout)."""
    return subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}", "-o", ".venv/bin/.installed-runtime"],
        cwd=ROOT,
        env=operator_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # make and the server in a group of their own, stopped together
    )


def stop(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


@pytest.fixture
def make_run(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = free_port()
    process = start_make_run(tmp_path, port)
    yield port, process
    stop(process)


def test_make_run_serves_and_documents_the_port_it_is_given(
    make_run: tuple[int, subprocess.Popen[str]],
) -> None:
    port, process = make_run
    # Bound to 127.0.0.1, served as localhost: the same server, and a name browsers allow passkeys on.
    bound, base = f"http://127.0.0.1:{port}", f"http://localhost:{port}"
    lines = read_until(process, "Organisations register themselves")
    served = [line for line in lines if "serving on" in line]
    assert served == [f"agentgate (sandbox) serving on {bound} (public base URL {base})"]
    banner = "\n".join(lines[lines.index(served[0]) :])  # after the bind, like the line itself
    assert f"admin login  admin@agentgate.example / {DEMO_PASSWORD}" in banner
    assert f"curl {base}/v1/chat/completions" in banner and f"GET {base}/register" in banner
    mail = read_until(process, "Mail (verification and reset links)")[-1]
    assert mail.endswith("outbox (copy links from its .txt files) and the log.")
    dashboard = f"{base}/app"
    assert f"  dashboard    {dashboard}  (in a browser; passkeys work there too)" in banner
    sign_in = httpx.get(dashboard, headers={"Accept": "text/html"}, follow_redirects=True, timeout=10)
    assert sign_in.status_code == 200 and 'data-test="passkey-login"' in sign_in.text
    for path in DOCUMENTS:
        text = httpx.get(bound + path, timeout=10).text
        assert f"localhost:{port}" in text and ":8000" not in text, path


def test_a_restart_says_how_to_make_a_key_with_a_command_that_works_as_printed(tmp_path: Path) -> None:
    port = free_port()
    first = start_make_run(tmp_path, port)
    try:
        read_until(first, "Organisations register themselves")
    finally:
        stop(first)
    again = start_make_run(tmp_path, port)
    try:
        lines = read_until(again, " keys create --tenant ")
    finally:
        stop(again)
    assert f"  dashboard    http://localhost:{port}/app" in lines
    hint = lines[-1].strip()
    assert hint.startswith(".venv/bin/agentgate keys create --tenant ten_"), (
        hint
    )  # not on PATH after make run
    made = subprocess.run(
        [*shlex.split(hint), "--json"],
        cwd=ROOT,
        env=operator_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["key"].startswith("sk_test_")


def test_a_busy_port_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [str(AGENTGATE), "serve", "--port", str(port)],
            env=operator_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"error: cannot listen on 127.0.0.1:{port}: the port is already in use\n"
    assert list(tmp_path.iterdir()) == []  # refused before the migration created anything


def dry_run(*argv: str) -> str:
    return subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_make_run_installs_the_runtime_only_and_takes_host_and_port() -> None:
    commands = dry_run("run", "HOST=0.0.0.0", "PORT=18123")
    assert "uv pip install --quiet --compile-bytecode --python .venv/bin/python -e .\n" in commands
    assert "[dev]" not in commands
    # the quiet install says first what it is doing (the first run takes about a minute)
    lines = commands.splitlines()
    install = next(n for n, line in enumerate(lines) if line.endswith(" -e ."))
    assert lines[install - 1].startswith('echo "Installing agentgate and its runtime dependencies'), lines
    assert lines[0].startswith('echo "Creating the virtual environment'), lines
    assert commands.rstrip().endswith("agentgate serve --host 0.0.0.0 --port 18123")
    assert dry_run("run").rstrip().endswith("agentgate serve --host 127.0.0.1 --port 8000")
    assert "--python .venv/bin/python -e '.[dev]'" in dry_run("test")


async def test_an_operators_own_password_is_never_printed(
    make_harness: HarnessFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    own = "an operator's own long passphrase"
    async with make_harness(admin_email="ops@example.com", admin_password=own):
        printed = capsys.readouterr().out
    assert "admin login  ops@example.com / the password in AGENTGATE_ADMIN_PASSWORD" in printed
    assert own not in printed
