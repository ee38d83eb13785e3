"""The banner of ``agentgate serve`` is printed once the socket listens: a client that connects the
moment the line appears waits in the backlog while the app starts, and is answered, never refused."""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.operability.served import AGENTGATE
from tests.operability.test_make_run import read_until


def connect_at_once(port: int) -> bytes:
    """Connect and send a request without any wait or retry; the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as client:
        client.sendall(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def serve(tmp_path: Path, port: int, workers: int, **env: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTGATE_", "OTEL_"))}
    environment.update(AGENTGATE_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1", **env)
    args = [str(AGENTGATE), "serve", "--port", str(port), "--workers", str(workers)]
    return subprocess.Popen(
        args, env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.redis)])
def test_a_client_connecting_when_the_banner_appears_is_served(
    tmp_path: Path, workers: int, request: pytest.FixtureRequest
) -> None:
    env = {}
    if workers > 1:  # several workers share their state through Redis
        redis_url = request.getfixturevalue("redis_url")
        env = {"AGENTGATE_REDIS_URL": redis_url, "AGENTGATE_KV_PREFIX": f"listen-{uuid.uuid4().hex[:8]}:"}
    port = free_port()
    process = serve(tmp_path, port, workers, **env)
    try:
        read_until(process, f":{port}")  # the banner names the address
        answer = connect_at_once(port)  # before the app has finished starting
    finally:
        process.terminate()
        process.wait(30)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


def test_an_upgrade_to_websocket_is_answered_as_plain_http(tmp_path: Path) -> None:
    """No route is a WebSocket, so the server runs without a WebSocket protocol (and its library): an
    upgrade request gets the route's ordinary answer, not a refused handshake (403)."""
    port = free_port()
    process = serve(tmp_path, port, 1)
    upgrade = (
        b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    try:
        read_until(process, f":{port}")
        with socket.create_connection(("127.0.0.1", port), timeout=60) as client:
            client.sendall(upgrade)
            answer = client.recv(65536)
    finally:
        process.terminate()
        process.wait(30)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
