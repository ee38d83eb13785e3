"""Uploads of the ``batch`` purpose are JSONL of batch requests; this reads and checks them by line.

A line is ``{"custom_id": "...", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``.
A bad line is refused with its number (1-based) in the message and ``param`` ``line <n>``, so a
client fixes its file without guessing. The batch runner reads lines with the same functions.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

from agent_server.foundation.errors import ValidationFailed

BATCH_ENDPOINTS = ("/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses")
MAX_CUSTOM_ID = 512


class RequestLine(NamedTuple):
    number: int  # 1-based, as an editor shows it
    custom_id: str
    url: str
    body: dict[str, Any]


async def split_lines(content: AsyncIterator[bytes], max_line: int) -> AsyncIterator[tuple[int, bytes]]:
    """(number, line) of every non-blank line, numbered from 1; a line over ``max_line`` bytes is refused."""
    pending, number = b"", 0
    async for piece in content:
        pending += piece
        *complete, pending = pending.split(b"\n")
        for line in complete:
            number += 1
            if line.strip():
                yield number, line
        if len(pending) > max_line:
            raise _bad(number + 1, f"is longer than {max_line} bytes")
    if pending.strip():
        yield number + 1, pending


def parse_line(number: int, raw: bytes, max_line: int) -> RequestLine:
    if len(raw) > max_line:
        raise _bad(number, f"is longer than {max_line} bytes")
    try:
        item = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise _bad(number, "is not valid JSON") from None
    if not isinstance(item, dict):
        raise _bad(number, "is not a JSON object")
    custom_id, url, body = item.get("custom_id"), item.get("url"), item.get("body")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > MAX_CUSTOM_ID:
        raise _bad(number, f"needs a custom_id: a string of 1 to {MAX_CUSTOM_ID} characters")
    if item.get("method", "POST") != "POST":
        raise _bad(number, "has a method other than POST")
    if url not in BATCH_ENDPOINTS:
        raise _bad(number, f"has url {url!r}; allowed: {', '.join(BATCH_ENDPOINTS)}")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise _bad(number, "needs a body: a JSON object with a model")
    if body.get("stream"):
        raise _bad(number, "asks for a stream; batch requests are answered whole")
    return RequestLine(number, custom_id, url, body)


async def check_batch_file(content: AsyncIterator[bytes], max_line: int) -> tuple[int, str]:
    """The number of request lines and the url they all call; refuses the first bad line, a
    repeated custom_id, a line calling another url than the first line, or a file without lines."""
    seen: set[str] = set()
    url = ""
    async for number, raw in split_lines(content, max_line):
        line = parse_line(number, raw, max_line)
        if line.custom_id in seen:
            raise _bad(number, f"repeats the custom_id {line.custom_id!r}; each must be unique")
        url = url or line.url
        if line.url != url:
            raise _bad(number, f"calls {line.url}, the lines before it {url}; a batch runs one endpoint")
        seen.add(line.custom_id)
    if not seen:
        raise ValidationFailed("The file holds no request lines.", param="file")
    return len(seen), url


def _bad(number: int, problem: str) -> ValidationFailed:
    return ValidationFailed(
        f"Line {number} of the file {problem}.", code="invalid_file", param=f"line {number}"
    )
