"""The MCP manifest: what ``GET /api/mcp.php`` and the MCP discovery documents describe."""

from __future__ import annotations

from typing import Any

from agent_server.mcp import MCP_PROTOCOL_VERSION
from agent_server.projections import annotations
from agent_server.registry import Registry
from agent_server.settings import Settings

MCP_PATH = "/api/mcp.php"


def mcp_manifest(registry: Registry, settings: Settings, title: str, description: str) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    return {
        "name": settings.service_name,
        "title": title,
        "description": description,
        "version": "2026-05-18",
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "endpoint": f"{base}{MCP_PATH}",
        "transport": {"type": "streamable-http", "url": f"{base}{MCP_PATH}", "stateless": True},
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
