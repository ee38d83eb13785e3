"""The MCP server: the official SDK's ``MCPServer`` with every list, call and read fed from the registry.

The SDK speaks the protocol (JSON-RPC, negotiation, transports); the registry answers. Every
``tools/call`` goes through ``Registry.invoke``, the same path as ``/api/tools/call``. Two low-level
servers share these handlers: the stateless one (``_lowlevel_server``, the default) and the one of
stateful sessions (``sessions.py``), which adds what needs a session; each declares exactly the
capabilities it serves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    DiscoverResult,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingCapability,
    PaginatedRequestParams,
    RequestParams,
)
from mcp.types import Prompt as MCPPrompt
from mcp.types import Resource as MCPResource
from mcp.types import ResourceTemplate as MCPResourceTemplate
from mcp.types import Tool as MCPTool

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry, ToolSpec
from agent_server.capabilities.services import Services
from agent_server.foundation.errors import AgentError, NotFound, ValidationFailed
from agent_server.mcp import call_context, exchange
from agent_server.mcp.bus import SDKBus
from agent_server.mcp.events import Events
from agent_server.mcp.projection import (
    completion,
    error_result,
    mcp_prompts,
    mcp_resources,
    mcp_templates,
    mcp_tools,
    prompt_result,
    resource_contents,
    tool_result,
)
from agent_server.mcp.sessions import SessionHub, sessions_server
from agent_server.mcp.tenant_tools import TenantTools
from agent_server.mcp.versions import MCP_PROTOCOL_VERSION, MODERN_VERSIONS, SUPPORTED_VERSIONS

__all__ = [
    "MCP_PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "RegistryMCPServer",
    "build_mcp_server",
    "error_result",
]

RESOURCE_NOT_FOUND = -32002  # the handshake eras' code; 2026-07-28 (SEP-2164) uses -32602


def _no_cursor(params: PaginatedRequestParams | None) -> None:
    """Every list fits one page, so no cursor is ever issued: any cursor sent is not one of ours."""
    if params is not None and params.cursor is not None:
        raise MCPError(INVALID_PARAMS, "Invalid cursor: this server lists everything in one page.")


def _invalid(err: AgentError) -> MCPError:
    data = {"param": err.param} if err.param else None
    return MCPError(INVALID_PARAMS, err.message, data=data)


class RegistryMCPServer(MCPServer):
    """``MCPServer`` whose tools, resources, templates and prompts are projections of the registry."""

    def __init__(self, registry: Registry, services: Services, events: Events, **kwargs: Any) -> None:
        self.bus = SDKBus(events)  # the app's event channel, running since its start (events.py)
        super().__init__(subscriptions=self.bus, **kwargs)
        self.registry = registry
        self.services = services
        self._tools = mcp_tools(registry)
        self._resources = mcp_resources(registry)
        self._templates = mcp_templates(registry)
        self._prompts = mcp_prompts(registry)
        self._base_url = services.settings.public_base_url.rstrip("/")
        self._progress_seconds = services.settings.mcp_progress_seconds
        lowlevel = self._lowlevel_server
        lowlevel.add_request_handler("completion/complete", CompleteRequestParams, self._handle_completion)
        lowlevel.add_request_handler("server/discover", RequestParams, self._handle_discover)
        self.hub = SessionHub(registry, self.bus)
        self.sessions_lowlevel = sessions_server(lowlevel, self.hub)  # copies the handlers above
        self.tenant: TenantTools | None = None  # the tenant's tools, for callers with a token

    @asynccontextmanager
    async def background(self) -> AsyncIterator[None]:
        """Delivery to sessions, for the app's lifetime."""
        async with self.hub.run():
            yield

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        try:
            return self.registry.get_tool(name).input_schema
        except NotFound:
            return None

    # Lists (no pagination: any cursor is refused)

    async def _handle_list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        _no_cursor(params)
        return ListToolsResult(tools=await self.list_tools())

    async def _handle_list_resources(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        _no_cursor(params)
        return ListResourcesResult(resources=await self.list_resources())

    async def _handle_list_resource_templates(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        _no_cursor(params)
        return ListResourceTemplatesResult(resource_templates=await self.list_resource_templates())

    async def _handle_list_prompts(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        _no_cursor(params)
        return ListPromptsResult(prompts=await self.list_prompts())

    async def list_tools(self) -> list[MCPTool]:
        return self._tools + (self.tenant.visible() if self.tenant is not None else [])

    async def list_resources(self) -> list[MCPResource]:
        return self._resources

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return self._templates

    async def list_prompts(self) -> list[MCPPrompt]:
        return self._prompts

    # Tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        answer = await self.tool_answer(name, arguments, context)
        return answer if isinstance(answer, CallToolResult) else tool_result(answer)

    async def tool_answer(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        """The tool's own answer (its model, or an ``MCPAnswer``), or the ``isError`` result of its
        failure; ``tool_result`` makes the MCP result of an answer (the fast path keeps it serialised)."""
        ctx = ToolContext(self.services, surface="mcp")
        started = time.perf_counter()
        with call_context.running(context):
            try:
                if self.tenant is not None and self.tenant.scope_of(name) is not None:
                    result = await self.tenant.invoke(name, arguments)  # the caller's organisation
                else:
                    result = await self._run(name, arguments, ctx, context)
            except NotFound as err:
                if err.param == "name":  # an unknown tool is a protocol error, not a tool failure
                    raise MCPError(code=INVALID_PARAMS, message=err.message) from None
                await exchange.log(context, "warning", f"{name}: {err.message}")
                return error_result(err, self._base_url)
            except AgentError as err:
                await exchange.log(context, "warning", f"{name}: {err.message}")
                protocol_error = err.extra.get("acp_error")
                if protocol_error is not None:  # ACP's MCP binding: JSON-RPC error, its Error in data
                    raise MCPError(code=err.jsonrpc_code, message=err.message, data=protocol_error) from None
                return error_result(err, self._base_url)
        if isinstance(result, exchange.MCPAnswer) and result.error is not None:
            raise MCPError.from_error_data(result.error)
        elapsed = (time.perf_counter() - started) * 1000
        await exchange.log(context, "info", f"{name}: answered in {elapsed:.0f} ms")
        return result

    async def _run(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext, context: Context | None
    ) -> Any:
        """``Registry.invoke``; a long tool (one that reaches outside) reports progress while it runs."""
        spec = self._long_tool(name)
        if spec is None or context is None:
            return await self.registry.invoke(name, arguments, ctx)
        heartbeat = exchange.Heartbeat(context, spec.title, self._progress_seconds)
        await heartbeat.start()
        failure: AgentError | None = None
        async with anyio.create_task_group() as beats:
            beats.start_soon(heartbeat.beat_forever)
            try:
                result = await self.registry.invoke(name, arguments, ctx)
            except AgentError as err:  # raised after the group, which would wrap it in an ExceptionGroup
                failure = err
            finally:
                beats.cancel_scope.cancel()
        if failure is not None:
            raise failure
        await heartbeat.finish()
        return result

    def _long_tool(self, name: str) -> ToolSpec | None:
        try:
            spec = self.registry.get_tool(name)
        except NotFound:
            return None
        timeout = spec.meta.timeout or self.registry.default_timeout
        return spec if spec.meta.open_world or timeout > self.registry.default_timeout else None

    # Resources

    async def read_resource(self, uri: Any, context: Context | None = None) -> Iterable[ReadResourceContents]:
        ctx = ToolContext(self.services, surface="mcp")
        try:
            spec, content = await self.registry.read(str(uri), ctx)
        except NotFound as err:
            modern = context is not None and context.request_context.protocol_version in MODERN_VERSIONS
            code = INVALID_PARAMS if modern else RESOURCE_NOT_FOUND
            raise MCPError(code=code, message=err.message, data={"uri": str(uri)}) from None
        return [resource_contents(spec, content)]

    # Prompts and completions

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        ctx = ToolContext(self.services, surface="mcp")
        with call_context.running(context):
            try:
                spec, messages = await self.registry.render_prompt(name, arguments, ctx)
            except (NotFound, ValidationFailed) as err:
                raise _invalid(err) from None
        if isinstance(messages, exchange.MCPAnswer) and messages.result is not None:
            return messages.result  # input requests first (2026-07-28 multi-round trip)
        return prompt_result(spec, messages)

    async def _handle_completion(self, ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        """Completes prompt arguments and template parameters (MCP completes those, not tool arguments)."""
        ref, argument = params.ref, params.argument.name
        tool_ctx = ToolContext(self.services, surface="mcp")
        if ref.type == "ref/prompt":
            try:
                prompt = self.registry.get_prompt(ref.name)
            except NotFound as err:
                raise _invalid(err) from None
            found = next((a for a in prompt.arguments if a.name == argument), None)
            if found is None:
                raise MCPError(INVALID_PARAMS, f"Prompt {ref.name} has no argument '{argument}'.")
            choices = found.choices
        else:
            template = next((t for t in self.registry.templates if t.uri_template == ref.uri), None)
            if template is None:
                raise MCPError(INVALID_PARAMS, f"Unknown resource template '{ref.uri}'.")
            if argument not in template.variables:
                raise MCPError(INVALID_PARAMS, f"Template {ref.uri} has no parameter '{argument}'.")
            choices = template.choices.get(argument)
        return CompleteResult(completion=completion(choices, tool_ctx, params.argument.value))

    async def _handle_discover(self, ctx: Any, params: RequestParams) -> DiscoverResult:
        """The SDK's discovery, plus logging: 2026-07-28 delivers log messages to requests that opt in."""
        lowlevel = self._lowlevel_server
        capabilities = lowlevel.get_capabilities(protocol_version=ctx.protocol_version)
        capabilities.logging = LoggingCapability()
        return DiscoverResult(
            supported_versions=list(MODERN_VERSIONS),
            capabilities=capabilities,
            instructions=lowlevel.instructions,
        )


def build_mcp_server(registry: Registry, services: Services, events: Events) -> RegistryMCPServer:
    settings = services.settings
    if settings.log_level.upper() != "DEBUG":
        # The SDK logs "Terminating session: None" at INFO for every stateless request: noise, and a
        # second log write per tools/call. Registry.invoke already logs one line per call.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    company = services.knowledge.pack.company
    return RegistryMCPServer(
        registry,
        services,
        events,
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
