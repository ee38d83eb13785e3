"""One POST body checked against JSON-RPC 2.0 before the SDK reads it, in every protocol era.

JSON-RPC answers a body that is no JSON with -32700 and one that is no valid request object with
-32600 Invalid Request (``id: null`` when the id itself is the problem): an ``id`` that is an object,
an array, a fraction or ``null``, a missing or non-string ``method``, ``jsonrpc`` other than "2.0",
``params`` that are not structured. MCP sends one message per POST (2025-06-18 removed batching), so
an array is refused with -32600 as well. Params given as an array are valid JSON-RPC but name no
MCP parameter: -32602. What passes is described for routing (``Inbound``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp.types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

PROGRESS_TOKEN = "progressToken"
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
# Requests whose answer is a stream by nature.
STREAMING_METHODS = frozenset({"subscriptions/listen"})


@dataclass(frozen=True)
class Inbound:
    method: str | None  # None: the client's response to a request of the server
    is_request: bool
    wants_stream: bool  # progress or log notifications asked for, or a stream by nature


@dataclass(frozen=True)
class Refusal:
    code: int
    message: str
    id: int | str | None = None
    status: int = 400

    def body(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def inspect(body: bytes) -> Inbound | Refusal:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return Refusal(PARSE_ERROR, "Parse error: the body is not JSON.")
    if isinstance(message, list):
        return Refusal(INVALID_REQUEST, "Batches are not accepted: send one JSON-RPC message per POST.")
    if not isinstance(message, dict):
        return Refusal(INVALID_REQUEST, "Invalid Request: the body must be a JSON-RPC message object.")
    has_id = "id" in message
    if has_id and not _valid_id(message["id"]):
        return Refusal(INVALID_REQUEST, "Invalid Request: id must be a string or an integer.")
    request_id = message.get("id")
    if message.get("jsonrpc") != "2.0":
        return Refusal(INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0".', request_id)
    if "method" not in message:
        if has_id and ("result" in message) != ("error" in message):
            return Inbound(method=None, is_request=False, wants_stream=False)
        return Refusal(INVALID_REQUEST, "Invalid Request: method is missing.", request_id)
    method = message["method"]
    if not isinstance(method, str) or not method:
        return Refusal(INVALID_REQUEST, "Invalid Request: method must be a non-empty string.", request_id)
    params = message.get("params")
    # Present means structured: "params": null is no object either (JSON-RPC 2.0, section 4.2).
    if "params" in message and not isinstance(params, dict | list):
        return Refusal(INVALID_REQUEST, "Invalid Request: params must be an object.", request_id)
    if isinstance(params, list):
        return Refusal(INVALID_PARAMS, "Invalid params: MCP params are named (an object).", request_id)
    meta = (params or {}).get("_meta")
    asks = isinstance(meta, dict) and (PROGRESS_TOKEN in meta or LOG_LEVEL_META in meta)
    return Inbound(method=method, is_request=has_id, wants_stream=asks or method in STREAMING_METHODS)
