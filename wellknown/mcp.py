"""The MCP server card: what ``GET /api/mcp.php`` and the MCP discovery documents describe.

The card follows the Server Card schema (SEP-2127, ``modelcontextprotocol/experimental-ext-server-card``)
and keeps the manifest members older clients read (``endpoint``, ``transport``, ``tools``, ...); the
schema allows members beyond its own.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from agent_server.mcp import MCP_PROTOCOL_VERSION
from agent_server.projections import annotations
from agent_server.registry import Registry
from agent_server.settings import Settings
from agent_server.versions import CURRENT_VERSION

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


def mcp_manifest(
    registry: Registry, settings: Settings, title: str, description: str, *, website: str | None = None
) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    endpoint = f"{base}{MCP_PATH}"
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
                "supportedProtocolVersions": [MCP_PROTOCOL_VERSION],
            }
        ],
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "endpoint": endpoint,
        "transport": {"type": "streamable-http", "url": endpoint, "stateless": True},
        "authentication": {"required": False},
        "capabilities": {
            "tools": {"listChanged": False},
            "resources": {"subscribe": False, "listChanged": False},
        },
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
    }


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


def mcp_openapi_operations(suffix: str = "") -> dict[str, dict[str, Any]]:
    """OpenAPI operations of the raw route ``/api/mcp.php`` (FastAPI cannot describe it); ``suffix``
    keeps operation ids unique for an alias path."""
    card = {"type": "object", "required": ["$schema", "name", "version", "description"]}
    json_rpc = {"application/json": {"schema": _JSONRPC_RESPONSE}}
    version_header = {"MCP-Version": {"schema": {"type": "string", "const": MCP_PROTOCOL_VERSION}}}
    return {
        "get": {
            "tags": ["mcp"],
            "summary": "MCP server card (manifest discovery)",
            "operationId": "mcp_manifest_get" + suffix,
            "responses": {
                "200": {
                    "description": "The MCP server card.",
                    "headers": version_header,
                    "content": {"application/json": {"schema": card}},
                }
            },
        },
        "post": {
            "tags": ["mcp"],
            "summary": "MCP JSON-RPC 2.0 over streamable HTTP (protocol 2025-06-18, stateless)",
            "description": (
                "One JSON-RPC message per POST: initialize, tools/list, tools/call, resources/list, "
                "resources/read. Answers JSON, or an SSE stream when Accept lists only text/event-stream."
            ),
            "operationId": "mcp_jsonrpc_post" + suffix,
            "requestBody": {"required": True, "content": {"application/json": {"schema": _JSONRPC_REQUEST}}},
            "responses": {
                "200": {
                    "description": "The JSON-RPC response (a result or a JSON-RPC error).",
                    "headers": version_header,
                    "content": {**json_rpc, "text/event-stream": {"schema": {"type": "string"}}},
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
        "delete": {
            "tags": ["mcp"],
            "summary": "End a session: the server is stateless, so this is always refused",
            "operationId": "mcp_session_delete" + suffix,
            "responses": {
                "405": {
                    "description": "Sessions are not kept; nothing to end.",
                    "headers": {"Allow": {"schema": {"type": "string"}}},
                    "content": json_rpc,
                }
            },
        },
    }
