"""Which MCP requests the fast path may answer: a plain, stateless JSON-RPC request for a hot method.

Everything here errs towards the SDK. A request is taken only when its headers, envelope and params
are exactly what a plain client sends and the SDK's own per-version schema accepts them; anything
else (a session, a resumed stream, ``Mcp-Param-*`` headers, a repeated routing header, a batch, a
notification, an odd ``id``, unknown keys, ``_meta`` beyond the 2026-07-28 envelope, a cursor, a
version the SDK would reject) returns ``None`` and the SDK answers it, errors included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, DEFAULT_NEGOTIATED_VERSION
from mcp_types import PROTOCOL_VERSION_META_KEY as VERSION_META_KEY
from mcp_types import methods as mcp_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

# The params each hot method may carry here; ``_meta`` is checked separately per era.
HANDSHAKE_METHODS: dict[str, frozenset[str]] = {
    "tools/list": frozenset(),
    "tools/call": frozenset({"name", "arguments"}),
    "resources/read": frozenset({"uri"}),
    "ping": frozenset(),
}
# 2026-07-28 has no ping (the SDK answers it -32601): it stays with the SDK.
MODERN_METHODS = {method: keys for method, keys in HANDSHAKE_METHODS.items() if method != "ping"}
ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
MODERN_META_KEYS = frozenset({VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY})
ROUTING_HEADERS = {b"mcp-protocol-version", b"mcp-method", b"mcp-name"}
# Sessions and resumed streams belong to the SDK's stateful transport.
SDK_ONLY_HEADERS = frozenset({b"mcp-session-id", b"last-event-id"})
PARAM_HEADER_PREFIX = b"mcp-param-"


@dataclass(frozen=True, slots=True)
class HotRequest:
    """A request the fast path answers: its era decides the wire form of the answer."""

    id: int | str
    method: str
    params: dict[str, Any]
    version: str  # the protocol version the SDK would serve it at
    modern: bool  # 2026-07-28 single exchange (else a handshake-era stateless POST)


def hot_request(headers: Iterable[tuple[bytes, bytes]], body: bytes) -> HotRequest | None:
    """The request, if the fast path may answer it; ``None`` hands it to the SDK."""
    routing: dict[str, str] = {}
    for key, value in headers:
        if key in ROUTING_HEADERS:
            name = key.decode()
            if name in routing:  # the SDK refuses a repeated routing header with its own error
                return None
            routing[name] = value.decode("latin-1")
        elif key in SDK_ONLY_HEADERS or key.startswith(PARAM_HEADER_PREFIX):
            return None
    header_version = routing.get("mcp-protocol-version")
    if header_version is None or header_version in HANDSHAKE_PROTOCOL_VERSIONS:
        return _handshake_request(body, header_version or DEFAULT_NEGOTIATED_VERSION)
    if header_version in MODERN_PROTOCOL_VERSIONS:
        return _modern_request(body, routing)
    return None  # an unknown version: the SDK's classifier answers it


def _handshake_request(body: bytes, version: str) -> HotRequest | None:
    try:
        message = pydantic_core.from_json(body)  # the parser the SDK's handshake transport uses
    except ValueError:
        return None
    request = _envelope(message, HANDSHAKE_METHODS)
    # _meta (a progress token, say) stays with the SDK in the handshake eras
    if request is None or "_meta" in request[2]:
        return None
    return _accepted(*request, version, modern=False)


def _modern_request(body: bytes, routing: dict[str, str]) -> HotRequest | None:
    try:
        message = json.loads(body)  # the parser the SDK's 2026-07-28 entry uses
    except (ValueError, RecursionError):
        return None
    request = _envelope(message, MODERN_METHODS)
    if request is None:
        return None
    meta = request[2].get("_meta")
    if not isinstance(meta, dict) or not meta.keys() <= MODERN_META_KEYS:
        return None
    # The SDK's own ladder: envelope keys, headers equal to the body, a served version.
    if isinstance(classify_inbound_request(message, headers=routing), InboundLadderRejection):
        return None
    return _accepted(*request, meta[VERSION_META_KEY], modern=True)


def _envelope(
    message: Any, methods: dict[str, frozenset[str]]
) -> tuple[int | str, str, dict[str, Any]] | None:
    """``(id, method, params)`` of one plain request for a hot method; ``None`` for anything else."""
    if type(message) is not dict or not message.keys() <= ENVELOPE_KEYS or message.get("jsonrpc") != "2.0":
        return None
    request_id, method = message.get("id"), message.get("method")
    # type(): a bool id is not an int here, and a method that is no string (a list, an object) is no hot one
    if type(request_id) not in (int, str) or type(method) is not str or method not in methods:
        return None
    params = message.get("params", {})
    if type(params) is not dict or not (params.keys() - {"_meta"}) <= methods[method]:
        return None
    return request_id, method, params


def _accepted(
    request_id: int | str, method: str, params: dict[str, Any], version: str, *, modern: bool
) -> HotRequest | None:
    """The request once the SDK's per-version schema accepts its params (its errors are the SDK's)."""
    try:
        mcp_methods.validate_client_request(method, version, params)
    except (KeyError, ValueError, ValidationError):
        return None
    return HotRequest(request_id, method, params, version, modern)
