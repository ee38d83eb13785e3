"""The MCP server: the official SDK's ``MCPServer`` with its tool and resource lists fed from the registry.

The SDK speaks the protocol (JSON-RPC, negotiation, transports); the registry answers. Every
``tools/call`` goes through ``Registry.invoke``, the same path as ``/api/tools/call``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Resource as MCPResource
from mcp.types import ResourceTemplate as MCPResourceTemplate
from mcp.types import Tool as MCPTool

from agent_server.context import ToolContext
from agent_server.errors import AgentError, NotFound, site_envelope
from agent_server.projections import annotations
from agent_server.registry import Registry
from agent_server.services import Services

MCP_PROTOCOL_VERSION = "2025-06-18"


def mcp_tools(registry: Registry) -> list[MCPTool]:
    return [
        MCPTool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=ToolAnnotations(**{k: v for k, v in annotations(spec).items()}),
        )
        for spec in registry.tools
    ]


def mcp_resources(registry: Registry) -> list[MCPResource]:
    return [
        MCPResource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
        for r in registry.resources
    ]


def error_result(err: AgentError, base_url: str = "") -> CallToolResult:
    """A tool failure the calling model can read and correct (MCP ``isError``)."""
    text = json.dumps(site_envelope(err, base_url), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class RegistryMCPServer(MCPServer):
    """``MCPServer`` whose tools and resources are projections of the registry."""

    def __init__(self, registry: Registry, services: Services, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.registry = registry
        self.services = services
        self._tools = mcp_tools(registry)
        self._resources = mcp_resources(registry)
        self._base_url = services.settings.public_base_url.rstrip("/")

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        try:
            return self.registry.get_tool(name).input_schema
        except NotFound:
            return None

    async def list_tools(self) -> list[MCPTool]:
        return self._tools

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        ctx = ToolContext(self.services, surface="mcp")
        try:
            result = await self.registry.invoke(name, arguments, ctx)
        except NotFound as err:
            if err.param == "name":  # an unknown tool is a protocol error, not a tool failure
                raise MCPError(code=-32602, message=err.message) from None
            return error_result(err, self._base_url)
        except AgentError as err:
            return error_result(err, self._base_url)
        # the text block repeats the object for clients that ignore structuredContent (pydantic's
        # serialiser writes it: faster than json.dumps of the dumped dict)
        text = result.model_dump_json()
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=result.model_dump(mode="json")
        )

    async def list_resources(self) -> list[MCPResource]:
        return self._resources

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return []

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        ctx = ToolContext(self.services, surface="mcp")
        try:
            spec, text = await self.registry.read(str(uri), ctx)
        except NotFound as err:
            raise MCPError(code=-32002, message=err.message, data={"uri": str(uri)}) from None
        return [ReadResourceContents(content=text, mime_type=spec.mime_type)]


def build_mcp_server(registry: Registry, services: Services) -> RegistryMCPServer:
    settings = services.settings
    if settings.log_level.upper() != "DEBUG":
        # The SDK logs "Terminating session: None" at INFO for every stateless request: noise, and a
        # second log write per tools/call. Registry.invoke already logs one line per call.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    company = services.knowledge.pack.company
    return RegistryMCPServer(
        registry,
        services,
        name=settings.service_name,
        title=f"{company.name} public MCP server",
        description=company.tagline,
        instructions=(
            f"Tools and resources of {company.name}. Start with ask_{settings.service_name} for free-form "
            "questions; read kb://core for the essentials."
        ),
        website_url=settings.public_base_url,
        version="2026-05-18",
        log_level="WARNING",
    )
