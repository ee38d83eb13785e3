"""The versions every worker names without the SDK (agent_server/mcp/versions.py) are the SDK's."""

from __future__ import annotations

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from agent_server.mcp.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS


def test_the_named_versions_are_the_ones_the_installed_sdk_serves() -> None:
    assert tuple(HANDSHAKE_PROTOCOL_VERSIONS) == HANDSHAKE_VERSIONS
    assert tuple(MODERN_PROTOCOL_VERSIONS) == MODERN_VERSIONS
    assert (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS) == SUPPORTED_VERSIONS
