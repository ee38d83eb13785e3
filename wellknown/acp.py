"""``/.well-known/acp.json``: the Agentic Commerce Protocol's discovery document (its RFC
"discovery", schema ``DiscoveryResponse``): the version served, the REST base and the MCP transport,
and what a session offers. Only what is live: checkout, order events, 3-D Secure, the catalogue's
currencies."""

from __future__ import annotations

from typing import Any

from agent_server.commerce.view import ACP_VERSION
from agent_server.commerce.wiring import API_BASE as ACP_API_BASE
from agent_server.foundation.settings import Settings

ACP_DISCOVERY_PATH = "/.well-known/acp.json"
__all__ = ["ACP_API_BASE", "ACP_DISCOVERY_PATH", "ACP_VERSION", "acp_discovery"]


def acp_discovery(settings: Settings, currencies: list[str]) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    return {
        "protocol": {
            "name": "acp",
            "version": ACP_VERSION,
            "supported_versions": [ACP_VERSION],
            "documentation_url": f"{base}/AGENTS.md",
        },
        "api_base_url": f"{base}{ACP_API_BASE}",
        "transports": ["rest", "mcp"],
        "capabilities": {
            "services": ["checkout", "orders"],
            "intervention_types": ["3ds"],
            "supported_currencies": sorted(currencies),
            "supported_locales": ["en"],
        },
    }
