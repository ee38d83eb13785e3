"""The MCP server card: what ``GET /api/mcp.php`` and the MCP discovery documents describe.

The card follows the Server Card schema (SEP-2127, ``modelcontextprotocol/experimental-ext-server-card``)
and keeps the manifest members older clients read (``endpoint``, ``transport``, ``tools``, ...); the
schema allows members beyond its own.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from agent_server.capabilities.projections import annotations
from agent_server.capabilities.registry import Registry
from agent_server.foundation.settings import Settings
from agent_server.mcp.versions import MCP_PROTOCOL_VERSION, SUPPORTED_VERSIONS
from agent_server.policies.versions import CURRENT_VERSION
from wellknown.event_stream import EVENT_STREAM, SSE

MCP_PATH = "/api/mcp.php"
SERVER_CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_PATHS = ("/.well-known/mcp.json", "/.well-known/mcp/manifest.json", "/.well-known/mcp/server-card.json")


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (the card caps title and description at 100)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def server_card_name(settings: Settings, website: str | None = None) -> str:
    """Reverse-DNS namespace of the company's web host (or the public host), slash, service name."""
    host = urlsplit(website or settings.public_base_url).hostname or "localhost"
    labels = [label for label in host.split(".") if label]
    if not labels or all(label.isdigit() for label in labels) or host == "localhost":
        namespace = "local"
    else:
        namespace = ".".join(reversed(labels))
    return f"{namespace}/{settings.service_name}"


def mcp_capabilities(settings: Settings) -> dict[str, Any]:
    """What ``initialize`` declares: stateless, or (sessions on) with logging and resource subscriptions."""
    sessions = settings.mcp_sessions
    return {
        "tools": {"listChanged": False},
        "resources": {"subscribe": sessions, "listChanged": False},
        "prompts": {"listChanged": False},
        "completions": {},
        **({"logging": {}} if sessions else {}),
    }


def mcp_manifest(
    registry: Registry, settings: Settings, title: str, description: str, *, website: str | None = None
) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    endpoint = f"{base}{MCP_PATH}"
    versions = list(SUPPORTED_VERSIONS)
    return {
        "$schema": SERVER_CARD_SCHEMA,
        "name": server_card_name(settings, website),
        "version": CURRENT_VERSION,
        "title": clip(title, 100),
        "description": clip(description, 100) or settings.service_name,
        "websiteUrl": website or base,
        "remotes": [
            {
                "type": "streamable-http",
                "url": endpoint,
                "supportedProtocolVersions": versions,
            }
        ],
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "supportedProtocolVersions": versions,
        "endpoint": endpoint,
        "transport": {
            "type": "streamable-http",
            "url": endpoint,
            "stateless": not settings.mcp_sessions,
            "sessions": settings.mcp_sessions,
        },
        "authentication": {"required": False},
        "capabilities": mcp_capabilities(settings),
        "tools": [
            {"name": t.name, "title": t.title, "description": t.description, "annotations": annotations(t)}
            for t in registry.tools
        ],
        "resources": [
            {
                "uri": r.uri,
                "name": r.name,
                "title": r.title,
                "description": r.description,
                "mimeType": r.mime_type,
            }
            for r in registry.resources
        ],
        "resourceTemplates": [
            {
                "uriTemplate": t.uri_template,
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "mimeType": t.mime_type,
            }
            for t in registry.templates
        ],
        "prompts": [
            {
                "name": p.name,
                "title": p.title,
                "description": p.description,
                "arguments": [
                    {"name": a.name, "description": a.description, "required": a.required}
                    for a in p.arguments
                ],
            }
            for p in registry.prompts
        ],
        **_commerce_meta(registry, base),
    }


def _commerce_meta(registry: Registry, base: str) -> dict[str, Any]:
    """Where agent platforms learn how to buy: the ACP discovery document, once its tools are served
    (they need an agent platform's credential, docs/agentic-commerce.md)."""
    if not any("commerce" in t.meta.tags for t in registry.tools):
        return {}
    return {"_meta": {"dev.agenticcommerce/discovery": f"{base}/.well-known/acp.json"}}


_JSONRPC_REQUEST = {
    "type": "object",
    "required": ["jsonrpc", "method"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer"], "description": "Absent for a notification."},
        "method": {"type": "string", "examples": ["initialize", "tools/list", "tools/call"]},
        "params": {"type": "object"},
    },
}
_JSONRPC_RESPONSE = {
    "type": "object",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "result": {"type": "object"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}},
        },
    },
}


def mcp_openapi_operations(suffix: str = "", sessions: bool = False) -> dict[str, dict[str, Any]]:
    """OpenAPI operations of the raw route ``/api/mcp.php`` (FastAPI cannot describe it); ``suffix``
    keeps operation ids unique for an alias path. DELETE ends a session: it exists with ``sessions``
    only (otherwise the route has no DELETE and answers 405)."""
    card = {"type": "object", "required": ["$schema", "name", "version", "description"]}
    json_rpc = {"application/json": {"schema": _JSONRPC_RESPONSE}}
    version_header = {"MCP-Version": {"schema": {"type": "string", "const": MCP_PROTOCOL_VERSION}}}
    operations: dict[str, dict[str, Any]] = {
        "get": {
            "tags": ["mcp"],
            "summary": "MCP server card (manifest discovery), or a session's SSE stream",
            "description": (
                "Without Mcp-Session-Id: the server card. With the id of an open session (sessions on): "
                "the session's stream of server messages, resumed after Last-Event-ID when sent."
            ),
            "operationId": "mcp_manifest_get" + suffix,
            "responses": {
                "200": {
                    "description": "The MCP server card, or the session's event stream.",
                    "headers": version_header,
                    "content": {"application/json": {"schema": card}, SSE: EVENT_STREAM},
                }
            },
        },
        "post": {
            "tags": ["mcp"],
            "summary": f"MCP JSON-RPC 2.0 over streamable HTTP (protocol {', '.join(SUPPORTED_VERSIONS)})",
            "description": (
                "One JSON-RPC message per POST: tools, resources and templates, prompts, completions, "
                "subscriptions/listen (2026-07-28), and with sessions on logging/setLevel and "
                "resources/subscribe. Answers JSON, or an SSE stream when Accept lists only "
                "text/event-stream or the request asks for progress or log notifications."
            ),
            "operationId": "mcp_jsonrpc_post" + suffix,
            "requestBody": {"required": True, "content": {"application/json": {"schema": _JSONRPC_REQUEST}}},
            "responses": {
                "200": {
                    "description": "The JSON-RPC response (a result or a JSON-RPC error).",
                    "headers": version_header,
                    "content": {**json_rpc, SSE: EVENT_STREAM},
                },
                "202": {"description": "A notification or response was accepted; no body."},
                "400": {
                    "description": "Not a valid JSON-RPC message, or an unsupported API-Version.",
                    "content": {
                        "application/json": {
                            "schema": {
                                "anyOf": [_JSONRPC_RESPONSE, {"$ref": "#/components/schemas/SiteError"}]
                            }
                        }
                    },
                },
            },
        },
    }
    if sessions:
        operations["delete"] = {
            "tags": ["mcp"],
            "summary": "End an MCP session",
            "operationId": "mcp_session_delete" + suffix,
            "parameters": [
                {"name": "Mcp-Session-Id", "in": "header", "required": True, "schema": {"type": "string"}}
            ],
            "responses": {
                "200": {"description": "The session named by Mcp-Session-Id has ended."},
                "404": {"description": "No such session.", "content": json_rpc},
                "400": {"description": "No Mcp-Session-Id: no session named.", "content": json_rpc},
            },
        }
    return operations
