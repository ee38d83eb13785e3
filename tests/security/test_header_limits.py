"""Request heads are bounded on a live ``agentgate serve``: a megabyte of one header or 2,000 header
fields get a short 431 at once and the connection closes, a too long target 414; ordinary large
heads still pass."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from http_facade.http_protocol import MAX_HEAD_BYTES, MAX_HEADER_FIELDS, MAX_TARGET_BYTES
from tests.operability.served import Served, serving

ANSWER_WITHIN = 10.0  # seconds; a refusal is immediate, this only turns a hang into a failure


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("limits")) as served:
        yield served


def exchange(served: Served, head: bytes) -> tuple[bytes, float]:
    """Send a whole request (reading meanwhile, as a client would); the answer up to the close."""
    port = int(served.url.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN) as client:
        client.setblocking(False)
        answer, pending = b"", memoryview(head)
        while time.monotonic() - started < ANSWER_WITHIN:
            if pending:
                try:
                    pending = pending[client.send(pending) :]
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    pending = pending[:0]  # the server stopped reading: the answer is what counts
            try:
                chunk = client.recv(65536)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            if not chunk:
                return answer, time.monotonic() - started
            answer += chunk
    pytest.fail(f"no complete answer within {ANSWER_WITHIN} s: {answer[:200]!r}")


def request(*headers: bytes, target: bytes = b"/health/live") -> bytes:
    lines = [b"GET " + target + b" HTTP/1.1", b"Host: 127.0.0.1", *headers, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def status_and_body(answer: bytes) -> tuple[int, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (request(b"X-Big: " + b"a" * 1_000_000), 431),
        (request(*(b"X-Field-%d: v" % i for i in range(2000))), 431),
        (request(*(b"X-Field-%d: v" % i for i in range(MAX_HEADER_FIELDS + 1))), 431),
        (request(*(b"X-Part-%d: " % i + b"b" * 4000 for i in range(20))), 431),  # 80 KB in fields
        (request(target=b"/health/live?q=" + b"c" * (MAX_TARGET_BYTES + 1)), 414),
    ],
    ids=["one-megabyte-header", "2000-fields", "fields-over-the-limit", "80-kb-of-fields", "long-target"],
)
def test_an_oversized_head_is_refused_at_once(server: Served, head: bytes, status: int) -> None:
    answer, seconds = exchange(server, head)
    assert status_and_body(answer)[0] == status, answer[:300]
    assert len(status_and_body(answer)[1]) < 100  # a short text, not an echo of the request
    assert b"connection: close" in answer.lower()
    assert seconds < 5


def test_large_but_ordinary_heads_pass(server: Served) -> None:
    token = b"Authorization: Bearer " + b"t" * 8000  # a large JWT
    cookies = b"Cookie: " + b"; ".join(b"c%d=%s" % (i, b"v" * 200) for i in range(40))
    fields = (b"X-Field-%d: v" % i for i in range(MAX_HEADER_FIELDS - 5))
    for head in (request(token, cookies), request(*fields), request(target=b"/health/live?q=" + b"x" * 8000)):
        assert len(head) < MAX_HEAD_BYTES
        answer, _ = exchange(server, head)
        assert status_and_body(answer)[0] == 200, answer[:300]


def test_the_server_keeps_serving_after_refusals(server: Served) -> None:
    for _ in range(3):
        exchange(server, request(b"X-Big: " + b"a" * 200_000))
    answer, _ = exchange(server, request())
    assert status_and_body(answer)[0] == 200


def test_the_limits_are_those_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    for value in (f"{MAX_HEAD_BYTES // 1024} KB", f"{MAX_TARGET_BYTES // 1024} KB", str(MAX_HEADER_FIELDS)):
        assert value in doc
