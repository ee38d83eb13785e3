"""The fast path writes 2026-07-28 answers with pydantic's JSON writer only where its bytes are
``json.dumps``'s (compact, ASCII): every value that would tell them apart takes ``json.dumps``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_server.mcp.fast import _dumps
from agent_server.mcp.fast_request import HotRequest

MODERN = HotRequest(1, "tools/call", {}, "2026-07-28", True)
VALUES: list[Any] = [
    {"text": '{"a": "b\\\\c"}\n\t\r\b\f\x00\x1f /', "n": 2**63 - 1, "m": -(2**63), "ok": True, "no": None},
    {"del": "\x7f"},  # json.dumps escapes DEL, pydantic does not
    {"accent": "Zürich", "emoji": "😀", "separator": "\u2028", "last": "\U0010ffff"},
    {"every": "".join(chr(c) for c in range(0x70, 0x3000))},  # escaped as json.dumps does, pair by pair
    {"lone": "\ud800"},  # a lone surrogate pydantic cannot write at all
    {"floats": [0.5, 1e16, 1e-05, 3.0, 1.5e300]},  # Python's float repr, not pydantic's
    {"huge": 2**70, "small": -(2**64)},
    {"nested": [{"k": ["v", 1, [None, {"x": "é"}]]}]},
    [],
    "plain",
]


@pytest.mark.parametrize("value", VALUES)
def test_modern_answers_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert _dumps(MODERN, value) == json.dumps(value, separators=(",", ":")).encode()
