"""Conformance fixture tools, part one: content blocks, notifications and requests to the client.

Registry tools like the service's own (``@tool`` on ``ToolContext``); where a fixture needs MCP itself
it reaches the running request through ``agent_server.mcp.exchange`` and answers with ``MCPAnswer``.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    AudioContent,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    ImageContent,
    InputRequest,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel, Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.mcp import call_context, exchange
from agent_server.mcp.exchange import MCPAnswer

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021


def mcp() -> Context:
    context = call_context.current()
    assert context is not None, "conformance fixtures run under MCP only"
    return context


def text(value: str) -> MCPAnswer:
    return MCPAnswer(result=CallToolResult(content=[TextContent(type="text", text=value)]))


def blocks(*content: Any) -> MCPAnswer:
    return MCPAnswer(result=CallToolResult(content=list(content)))


def ask(**requests: InputRequest) -> MCPAnswer:
    return MCPAnswer(result=InputRequiredResult(input_requests=requests))


def name_question(message: str = "What is your name?") -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=NAME_SCHEMA))


def sampling(prompt: str, max_tokens: int = 100) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


# Content


@tool(title="Simple text")
async def test_simple_text(ctx: ToolContext) -> MCPAnswer:
    """Tests simple text content response."""
    return text("This is a simple text response for testing.")


@tool(title="Image content")
async def test_image_content(ctx: ToolContext) -> MCPAnswer:
    """Tests image content response."""
    return blocks(ImageContent(type="image", data=IMAGE, mime_type="image/png"))


@tool(title="Audio content")
async def test_audio_content(ctx: ToolContext) -> MCPAnswer:
    """Tests audio content response."""
    return blocks(AudioContent(type="audio", data=AUDIO, mime_type="audio/wav"))


def embedded(uri: str, mime_type: str, body: str) -> EmbeddedResource:
    return EmbeddedResource(
        type="resource", resource=TextResourceContents(uri=uri, mime_type=mime_type, text=body)
    )


@tool(title="Embedded resource")
async def test_embedded_resource(ctx: ToolContext) -> MCPAnswer:
    """Tests embedded resource content response."""
    return blocks(embedded("test://embedded-resource", "text/plain", "This is an embedded resource content."))


@tool(title="Multiple content types")
async def test_multiple_content_types(ctx: ToolContext) -> MCPAnswer:
    """Tests response with multiple content types (text, image, resource)."""
    return blocks(
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=IMAGE, mime_type="image/png"),
        embedded("test://mixed-content-resource", "application/json", '{"test": "data", "value": 123}'),
    )


@tool(title="Error handling")
async def test_error_handling(ctx: ToolContext) -> MCPAnswer:
    """Tests error response handling."""
    raise RuntimeError("This tool intentionally returns an error for testing")


# Notifications


async def _log_three_times(name: str) -> None:
    for step in ("started", "processing data", "completed"):
        await exchange.log(mcp(), "info", f"Tool {name} {step}")
        await anyio.sleep(0.02)


@tool(title="Logging")
async def test_tool_with_logging(ctx: ToolContext) -> MCPAnswer:
    """Tests tool that emits log messages during execution."""
    await _log_three_times("execution")
    return text("Tool with logging executed successfully")


@tool(title="Logging (per-request level)")
async def test_logging_tool(ctx: ToolContext) -> MCPAnswer:
    """Logs at info; on 2026-07-28 the messages reach only a request that set a log level."""
    await _log_three_times("logging")
    return text("logged")


@tool(title="Progress")
async def test_tool_with_progress(ctx: ToolContext) -> MCPAnswer:
    """Tests tool that reports progress notifications."""
    for step in (0, 50, 100):
        await exchange.report_progress(mcp(), step, 100, f"Completed step {step} of 100")
        await anyio.sleep(0.02)
    meta = mcp().request_context.meta
    return text(str(meta.get("progress_token", 0) if meta else 0))


@tool(title="SSE reconnection")
async def test_reconnection(ctx: ToolContext) -> MCPAnswer:
    """Tests SSE polling by closing the stream mid-call (SEP-1699)."""
    await exchange.log(mcp(), "info", "Before disconnect")
    await mcp().close_sse_stream()
    await anyio.sleep(0.2)  # the client reconnects with Last-Event-ID meanwhile
    await exchange.log(mcp(), "info", "After reconnect")
    return text("Reconnection test completed")


# Requests to the client (handshake-era sessions)


@tool(title="Sampling")
async def test_sampling(ctx: ToolContext, prompt: str) -> MCPAnswer:
    """Tests server-initiated sampling (LLM completion request)."""
    context = mcp()
    # On the tool call's own stream (related to its request), where the client's answer is awaited.
    related = ServerMessageMetadata(related_request_id=context.request_id)
    result = await context.session.send_request(sampling(prompt), CreateMessageResult, metadata=related)
    answer = result.content.text if result.content.type == "text" else "No response"
    return text(f"LLM response: {answer}")


class UserResponse(BaseModel):
    response: str = Field(description="User's response")


class Defaults(BaseModel):
    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active",
        description="User status",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    verified: bool = Field(default=True, description="Verification status")


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


class Enums(BaseModel):
    untitledSingle: str = Field(
        description="Simple enum without titles",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": _titled(
                ("low", "Low Priority"), ("medium", "Medium Priority"), ("high", "High Priority")
            )
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {
                "anyOf": _titled(("feature", "New Feature"), ("bug", "Bug Fix"), ("docs", "Documentation"))
            }
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


async def _elicit(message: str, schema: type[BaseModel], label: str) -> MCPAnswer:
    result = await mcp().elicit(message=message, schema=schema)
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return text(f"{label}: action={result.action}, content={content}")


@tool(title="Elicitation")
async def test_elicitation(ctx: ToolContext, message: str) -> MCPAnswer:
    """Tests server-initiated elicitation (user input request)."""
    return await _elicit(message, UserResponse, "User response")


@tool(title="Elicitation defaults")
async def test_elicitation_sep1034_defaults(ctx: ToolContext) -> MCPAnswer:
    """Tests elicitation with default values for all primitive types (SEP-1034)."""
    return await _elicit("Please provide user information", Defaults, "Elicitation result")


@tool(title="Elicitation enums")
async def test_elicitation_sep1330_enums(ctx: ToolContext) -> MCPAnswer:
    """Tests elicitation with enum schema variations per SEP-1330."""
    return await _elicit(
        "Please select values using different enum schema types", Enums, "Elicitation completed"
    )


TOOLS = [
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_error_handling,
    test_tool_with_logging,
    test_logging_tool,
    test_tool_with_progress,
    test_reconnection,
    test_sampling,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
]
