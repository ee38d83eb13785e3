"""The tenant's tools on the MCP endpoint (docs/oauth.md, "MCP"): who calls, and what they see.

The endpoint resolves an OAuth access token to the caller (``CALLER``, set for the request by
http_facade/routes/mcp.py); the server then lists the tenant registry's tools whose scope the token
holds, besides the public ones, and runs them for that organisation. An anonymous caller sees the
public tools only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool as MCPTool

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry
from agent_server.capabilities.services import Services
from agent_server.mcp.call_context import CALLER
from agent_server.mcp.projection import mcp_tools


@dataclass
class TenantTools:
    registry: Registry
    services: Services  # the app's (the gateway is in its extras)
    listed: list[MCPTool] = field(default_factory=list)
    scopes: dict[str, str] = field(default_factory=dict)  # tool name -> the scope it needs

    def __post_init__(self) -> None:
        self.listed = mcp_tools(self.registry)
        self.scopes = {t.name: t.meta.scope or "" for t in self.registry.tools}
        # Each name as it can appear in a request's body (``may_be_named``).
        self._encoded = tuple(name.encode() for name in self.scopes)

    def scope_of(self, name: str) -> str | None:
        """The scope a tenant tool needs; None when ``name`` is no tenant tool."""
        return self.scopes.get(name)

    def may_be_named(self, body: bytes) -> bool:
        """False when the body cannot call a tenant tool: none of their names is in it, and no JSON
        escape (``\\u0067…``) could spell one. Public calls then skip a second JSON parse."""
        return b"\\u" in body or any(name in body for name in self._encoded)

    def visible(self) -> list[MCPTool]:
        caller = CALLER.get()
        if not caller.tenant_id:
            return []
        return [t for t in self.listed if self.scope_of(t.name) in caller.scopes]

    def context(self) -> ToolContext:
        return ToolContext(self.services, CALLER.get(), surface="mcp")

    async def invoke(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.registry.invoke(name, arguments, self.context())
