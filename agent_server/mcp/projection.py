"""The registry seen through MCP: tools, resources, templates and prompts as MCP types, and results.

Pure functions, no request state: ``RegistryMCPServer`` serves them and the fast path reuses them, so
both answer alike.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    InputRequiredResult,
    PromptMessage,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Prompt as MCPPrompt
from mcp.types import PromptArgument as MCPPromptArgument
from mcp.types import Resource as MCPResource
from mcp.types import ResourceTemplate as MCPResourceTemplate
from mcp.types import Tool as MCPTool
from pydantic import BaseModel

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.projections import annotations
from agent_server.capabilities.registry import Choices, PromptSpec, Registry, ResourceSpec, TemplateSpec
from agent_server.foundation.errors import AgentError, site_envelope
from agent_server.mcp.exchange import MCPAnswer

# The spec caps completion/complete at 100 values per answer.
MAX_COMPLETIONS = 100


def mcp_tools(registry: Registry) -> list[MCPTool]:
    return [
        MCPTool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            # An MCPAnswer tool answers in content blocks: it promises no structured output.
            output_schema=None if issubclass(spec.output, MCPAnswer) else spec.output_schema,
            annotations=ToolAnnotations(**annotations(spec)),
        )
        for spec in registry.tools
    ]


def mcp_resources(registry: Registry) -> list[MCPResource]:
    return [
        MCPResource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
        for r in registry.resources
    ]


def mcp_templates(registry: Registry) -> list[MCPResourceTemplate]:
    return [
        MCPResourceTemplate(
            uri_template=t.uri_template,
            name=t.name,
            title=t.title,
            description=t.description,
            mime_type=t.mime_type,
        )
        for t in registry.templates
    ]


def mcp_prompts(registry: Registry) -> list[MCPPrompt]:
    return [
        MCPPrompt(
            name=p.name,
            title=p.title,
            description=p.description,
            arguments=[
                MCPPromptArgument(name=a.name, description=a.description, required=a.required)
                for a in p.arguments
            ],
        )
        for p in registry.prompts
    ]


def tool_result(result: BaseModel) -> CallToolResult | InputRequiredResult:
    """A tool's model as MCP shows it: the object as structured content, and as text for clients
    that ignore structured content (pydantic's serialiser writes it: faster than json.dumps)."""
    if isinstance(result, MCPAnswer) and result.result is not None:
        return result.result
    return model_result(result.model_dump_json(), result)


def model_result(text: str, model: BaseModel) -> CallToolResult:
    """``tool_result`` of a plain model whose JSON ``text`` is already written."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=model.model_dump(mode="json")
    )


def error_result(err: AgentError, base_url: str = "") -> CallToolResult:
    """A tool failure the calling model can read and correct (MCP ``isError``)."""
    text = json.dumps(site_envelope(err, base_url), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def resource_contents(spec: ResourceSpec | TemplateSpec, content: str | bytes) -> ReadResourceContents:
    """What the SDK turns into text (``str``) or base64 ``blob`` (``bytes``) contents."""
    return ReadResourceContents(content=content, mime_type=spec.mime_type)


def prompt_result(spec: PromptSpec, messages: list[dict[str, Any]]) -> GetPromptResult:
    return GetPromptResult(
        description=spec.description, messages=[PromptMessage.model_validate(m) for m in messages]
    )


def completion(choices: Choices | None, ctx: ToolContext, typed: str) -> Completion:
    """Values for a prompt argument or template parameter: those starting with what was typed, then
    those containing it (case-insensitive), at most 100, with the total."""
    if choices is None:
        return Completion(values=[], total=0, has_more=False)
    needle = typed.casefold()
    values = list(dict.fromkeys(choices(ctx)))  # unique, in the content's order
    starting = [v for v in values if v.casefold().startswith(needle)]
    containing = [v for v in values if needle in v.casefold() and not v.casefold().startswith(needle)]
    found = starting + containing
    return Completion(values=found[:MAX_COMPLETIONS], total=len(found), has_more=len(found) > MAX_COMPLETIONS)
