"""``/.well-known/api-catalog``: an RFC 9727 API catalog as an RFC 9264 JSON linkset.

Two contexts: the HTTP API (gateway and public site API, described by ``/openapi.json``) and the MCP
endpoint (described by its server card). Relations are the RFC 8631 ones checkers look for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_server.foundation.settings import Settings
from wellknown.mcp import MCP_PATH

CATALOG_PATH = "/.well-known/api-catalog"
PROFILE = "https://www.rfc-editor.org/info/rfc9727"
MEDIA_TYPE = f'application/linkset+json; profile="{PROFILE}"'
STATUS_PATH = "/api/status.php"


def catalog_link_header() -> str:
    """The ``Link`` header HEAD (and GET) of the catalog carry (RFC 9727 section 2)."""
    return f'<{CATALOG_PATH}>; rel="api-catalog"; type="application/linkset+json"; profile="{PROFILE}"'


def _link(href: str, media_type: str, title: str) -> dict[str, str]:
    return {"href": href, "type": media_type, "title": title}


def api_catalog(settings: Settings, title: str, paths: Iterable[str]) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    served = set(paths)
    docs = [_link(f"{base}/AGENTS.md", "text/markdown", "How agents use this service")]
    if "/docs" in served:
        docs.append(_link(f"{base}/docs", "text/html", "Interactive API reference"))
    # The status document is the public site's; until it is served, the gateway probe stands in.
    if STATUS_PATH in served:
        status = _link(f"{base}{STATUS_PATH}", "application/health+json", "Service status")
    else:
        status = _link(f"{base}/health", "application/json", "Gateway health")
    meta = [
        _link(f"{base}/.well-known/agent-card.json", "application/json", "A2A agent card"),
        _link(f"{base}/.well-known/agent-skills/index.json", "application/json", "Agent skills index"),
        _link(f"{base}/.well-known/oauth-protected-resource", "application/json", "OAuth resource metadata"),
    ]
    return {
        "linkset": [
            {
                "anchor": f"{base}/",
                "service-desc": [
                    _link(f"{base}/openapi.json", "application/vnd.oai.openapi+json;version=3.1", title)
                ],
                "service-doc": docs,
                "status": [status],
                "service-meta": meta,
                "item": [_link(f"{base}{MCP_PATH}", "application/json", "MCP endpoint (JSON-RPC 2.0)")],
            },
            {
                "anchor": f"{base}{MCP_PATH}",
                "service-desc": [
                    _link(f"{base}/.well-known/mcp.json", "application/json", "MCP server card")
                ],
                "service-doc": docs[:1],
                "status": [status],
            },
        ]
    }
