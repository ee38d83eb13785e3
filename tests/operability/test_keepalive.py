"""``AGENTGATE_HTTP_KEEPALIVE_SECONDS``: how long ``agentgate serve`` keeps an idle connection open
(docs/deployment.md: above a load balancer's idle timeout, so that it never sends a request on a
connection the server is closing)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx

from tests.operability.served import serving


def _get(sock: socket.socket, host: str) -> bytes:
    """One GET /health/live on an open connection; the whole answer (it has a Content-Length)."""
    sock.sendall(f"GET /health/live HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"the server closed the connection instead of answering: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head


def test_an_idle_connection_stays_open_as_long_as_the_setting_says(tmp_path: Path) -> None:
    with serving(tmp_path, AGENTGATE_HTTP_KEEPALIVE_SECONDS="7") as served:
        url = httpx.URL(served.url)
        with socket.create_connection((url.host, url.port or 80), timeout=30) as sock:
            assert _get(sock, url.netloc.decode()).startswith(b"HTTP/1.1 200")
            time.sleep(5.5)  # longer than uvicorn's own default (5 s), with seconds to spare for a stall
            assert _get(sock, url.netloc.decode()).startswith(b"HTTP/1.1 200")  # the same connection
            idle_since = time.monotonic()
            assert sock.recv(1) == b""  # closed by the server (not by the 30 s socket timeout)
            assert time.monotonic() - idle_since > 6.5
