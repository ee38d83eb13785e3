"""The MCP fast path: hot stateless JSON requests answered without the SDK's per-request transport.

The SDK serves each stateless POST with a fresh transport, a task in its task group, memory streams,
a dispatcher and a request context: several times the cost of the call itself. For the hot methods
(``tools/list``, ``tools/call``, ``resources/read`` and, in the handshake eras, ``ping``) of a plain
request (``fast_request.py`` decides which) this module calls the MCP server's own methods
directly: ``RegistryMCPServer.call_tool`` (``Registry.invoke``, the one call path, and MCP's mapping of
its errors) and ``read_resource``, with no SDK request context, as a plain request asks for no progress
or log notifications.

The answer is the SDK's byte for byte because it is built with the SDK's own pieces, in the order its
request runner uses them: the result models, the cache hints, the per-version result schema
(``serialize_server_result``), the 2026-07-28 ``resultType`` and ``serverInfo`` stamp, the JSON-RPC
message models and each era's serialiser and HTTP status table. ``tests/mcp/test_fast_path_parity.py``
compares both paths on every tool and resource in every protocol era.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any, NamedTuple

import pydantic_core
from mcp.server.caching import apply_cache_hint
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, x_mcp_header_map
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    ListToolsResult,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)
from mcp_types import SERVER_INFO_META_KEY, CacheableResult, JSONRPCError
from mcp_types import methods as mcp_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from agent_server.mcp.exchange import MCPAnswer
from agent_server.mcp.fast_request import HotRequest, hot_request
from agent_server.mcp.projection import model_result, tool_result
from agent_server.mcp.server import RegistryMCPServer

log = logging.getLogger("agentgate.mcp")
JSON = b"application/json"
COMPACT = json.JSONEncoder(separators=(",", ":"))  # json.dumps(value, separators=...) without its set-up
MAX_ANSWERS = 128  # serialised tool answers kept, the oldest dropped first (at most ~3 MB)
MAX_ANSWER_TEXT = 8192  # a longer answer is serialised on every call


class FastAnswer(NamedTuple):
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class MCPFastPath:
    """Answers hot requests for one ``RegistryMCPServer``; ``answer`` returns ``None`` to defer to the SDK."""

    def __init__(self, server: RegistryMCPServer) -> None:
        self.server = server
        self.lowlevel = server._lowlevel_server  # the SDK's documented seam (as for the transports)
        # Tools the SDK must run: one that answers in MCP's own terms (input requests the SDK seals,
        # protocol errors) and one whose schema routes arguments into Mcp-Param-* headers it checks.
        self.sdk_tools = {
            t.name
            for t in server.registry.tools
            if issubclass(t.output, MCPAnswer) or x_mcp_header_map(t.input_schema)
        }
        self._tool_lists: dict[str, tuple[list[Any], bytes]] = {}  # by version: (the tools, the result)
        self._answers: dict[tuple[str, str], bytes] = {}  # serialised answers by (version, JSON text)
        # The server's identity is fixed at construction (the SDK dumps it once too); only read here.
        self._server_info = self.lowlevel.server_info_stamp

    @property
    def enabled(self) -> bool:
        """Middleware of the service (not the SDK's tracing and state sealing) may shape answers: the
        fast path stands down rather than skip it."""
        return all(type(m).__module__.startswith("mcp.") for m in self.lowlevel.middleware)

    async def answer(self, headers: list[tuple[bytes, bytes]], body: bytes) -> FastAnswer | None:
        request = hot_request(headers, body)
        if request is None or (
            request.method == "tools/call" and request.params.get("name") in self.sdk_tools
        ):
            return None
        entry = self.lowlevel.get_request_handler(request.method)
        if entry is None:
            return None
        try:
            result = await self._result(request, entry.params_type)
        except MCPError as exc:
            return _wire_error(request, exc)
        return None if result is None else _wire_result(request, result)

    async def _result(self, request: HotRequest, params_type: type[BaseModel]) -> bytes | None:
        """The result object, serialised as the request's era writes it; ``None`` defers to the SDK."""
        if request.method == "tools/list":
            return await self._tool_list(request)
        if request.method == "ping":
            return self._serialised(request, {})
        if request.method == "tools/call":
            # hot_request checked the params against the version's schema: a string name and an
            # object (or null) of arguments, which is all the SDK's model would give the handler
            arguments = request.params.get("arguments")
            return await self._tool_call(request, request.params["name"], arguments or {})
        params = params_type.model_validate(request.params, by_name=False)  # the SDK's coercions
        result = await self._read_resource(params.uri)
        return None if result is None else self._serialised(request, result)

    async def _tool_call(self, request: HotRequest, name: str, arguments: dict[str, Any]) -> bytes:
        """A tool's result, serialised. A successful answer's serialised form is a pure function of
        the version and the answer's JSON text (the text block holds it, the structured content is
        dumped from the same model): repeated answers (the catalogue, company facts, FAQ entries)
        reuse it and skip building and shaping the result's models. The tool still runs on every
        call (scope, arguments, counters)."""
        answer = await self._tool_answer(name, arguments)
        if isinstance(answer, CallToolResult | MCPAnswer):  # a failure, or an answer in MCP's own terms
            return self._serialised(
                request, answer if isinstance(answer, CallToolResult) else tool_result(answer)
            )
        text = answer.model_dump_json()
        if len(text) > MAX_ANSWER_TEXT:
            return self._serialised(request, model_result(text, answer))
        key = (request.version, text)
        serialised = self._answers.get(key)
        if serialised is None:
            serialised = self._serialised(request, model_result(text, answer))
            if len(self._answers) >= MAX_ANSWERS:
                del self._answers[next(iter(self._answers))]  # the oldest
            self._answers[key] = serialised
        return serialised

    async def _tool_list(self, request: HotRequest) -> bytes:
        """The same listing for every request of a version: shaped and serialised once per version
        (again when the server's tool list changes)."""
        tools = await self.server.list_tools()
        cached = self._tool_lists.get(request.version)
        if cached is None or cached[0] is not tools:
            shaped = self._shape(request.method, request.version, ListToolsResult(tools=tools))
            cached = self._tool_lists[request.version] = (tools, _dumps(request, shaped))
        return cached[1]

    async def _tool_answer(self, name: str, arguments: dict[str, Any]) -> BaseModel:
        """The server's answer; like the SDK's handler, an exception other than ``MCPError`` is an
        ``isError`` result (the server maps its own errors, so this is a last resort)."""
        try:
            return await self.server.tool_answer(name, arguments)
        except MCPError:
            raise
        except Exception as exc:
            log.exception("Tool %r raised an unexpected exception", name)
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    async def _read_resource(self, uri: Any) -> ReadResourceResult | None:
        """The server's read as the SDK's handler wraps it (text, or base64 for bytes). A read is safe
        to repeat, so a failed one is left to the SDK, which words the error for the request's era."""
        try:
            items = await self.server.read_resource(uri)
        except Exception:
            return None
        return ReadResourceResult(contents=[_contents(uri, item) for item in items])

    def _serialised(self, request: HotRequest, result: BaseModel | dict[str, Any]) -> bytes:
        return _dumps(request, self._shape(request.method, request.version, result))

    def _shape(self, method: str, version: str, result: BaseModel | dict[str, Any]) -> dict[str, Any]:
        """The SDK runner's outbound steps for a core result: cache hint, version schema, 2026 stamps."""
        hint = self.lowlevel.cache_hints.get(method)
        if hint is not None and isinstance(result, CacheableResult):
            result = apply_cache_hint(result, hint)
        dumped = (
            result.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(result, BaseModel)
            else dict(result)
        )
        shaped = mcp_methods.serialize_server_result(method, version, dumped)
        if version in MODERN_PROTOCOL_VERSIONS:
            if shaped.get("resultType") is None:
                shaped["resultType"] = "complete"
            if shaped.get("_meta") is None:
                shaped["_meta"] = {SERVER_INFO_META_KEY: self._server_info}
        return shaped


def _contents(uri: Any, item: ReadResourceContents) -> TextResourceContents | BlobResourceContents:
    if isinstance(item.content, bytes):
        blob = base64.b64encode(item.content).decode()
        mime_type = item.mime_type or "application/octet-stream"
        return BlobResourceContents(uri=uri, blob=blob, mime_type=mime_type, _meta=item.meta)
    return TextResourceContents(
        uri=uri, text=item.content, mime_type=item.mime_type or "text/plain", _meta=item.meta
    )


def _dumps(request: HotRequest, value: Any) -> bytes:
    """Each era's serialiser: pydantic's (UTF-8) in the handshake transport, ``json.dumps`` (ASCII,
    compact) in the 2026-07-28 entry."""
    if request.modern:
        return COMPACT.encode(value).encode()
    return pydantic_core.to_json(value)


def _wire_result(request: HotRequest, result: bytes) -> FastAnswer:
    # The SDK dumps a JSONRPCResponse model; a result already in wire form comes out of it unchanged,
    # so the envelope is written around the result's bytes (which tools/list keeps per version).
    body = b'{"jsonrpc":"2.0","id":' + _dumps(request, request.id) + b',"result":' + result + b"}"
    return _answer(request, 200, body)


def _wire_error(request: HotRequest, exc: MCPError) -> FastAnswer:
    message = JSONRPCError(jsonrpc="2.0", id=request.id, error=exc.error)
    if not request.modern:  # the handshake transport answers errors with 200
        return _answer(request, 200, message.model_dump_json(by_alias=True, exclude_unset=True).encode())
    body = _dumps(request, message.model_dump(mode="json", by_alias=True, exclude_none=True))
    return _answer(request, ERROR_CODE_HTTP_STATUS.get(exc.code, 200), body)


def _answer(request: HotRequest, status: int, body: bytes) -> FastAnswer:
    """The header lines in the order each SDK entry's response object writes them."""
    length = (b"content-length", str(len(body)).encode())
    headers = [length, (b"content-type", JSON)] if request.modern else [(b"content-type", JSON), length]
    return FastAnswer(status, headers, body)
