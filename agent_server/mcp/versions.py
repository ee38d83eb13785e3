"""The MCP protocol versions this server names and serves, importable without the SDK.

The edge, the discovery documents and the manifest name them in every worker, while the SDK that
serves them (~18 MB) loads at the first MCP request (http_facade/routes/mcp_on_demand.py).
tests/mcp/test_versions.py checks that these are exactly the versions the installed SDK serves.
"""

from __future__ import annotations

# The version the contract names (spec 9: the MCP-Version header); every version below is served.
MCP_PROTOCOL_VERSION = "2025-06-18"
# Reached through ``initialize`` (the SDK's HANDSHAKE_PROTOCOL_VERSIONS), then without it (MODERN).
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
SUPPORTED_VERSIONS: tuple[str, ...] = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
