"""The conformance suite's fixture tools, resources and prompts, registered through the registry (tests only).

``@modelcontextprotocol/conformance`` calls fixed names (the spec's "everything server"). Each one is
written here as the service writes its own capabilities: a ``@tool`` function on ``ToolContext``, a
``ResourceSpec``, a ``TemplateSpec``, a ``PromptSpec``, added to the registry ``build_registry`` makes.
Where a fixture needs MCP itself (content blocks, logging, progress, sampling, elicitation, input
requests) it reaches the running request through ``agent_server.mcp.exchange`` and answers with
``MCPAnswer``, as a service tool would. Only a test builds this registry.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import (
    PromptArgument,
    PromptSpec,
    Registry,
    ResourceSpec,
    TemplateSpec,
)
from agent_server.foundation.settings import Settings
from agent_server.mcp.exchange import MCPAnswer
from tests.mcp import conformance_inputs, conformance_tools
from tests.mcp.conformance_inputs import SCHEMA_2020_12, responses
from tests.mcp.conformance_tools import IMAGE
from tools import build_registry

TOOLS = [*conformance_tools.TOOLS, *conformance_inputs.TOOLS]


# Resources and prompts


def _fixed(value: str | bytes) -> Callable[[ToolContext], Awaitable[str | bytes]]:
    async def read(ctx: ToolContext) -> str | bytes:
        return value

    return read


async def _template_data(ctx: ToolContext, variables: dict[str, str]) -> str:
    item = variables["id"]
    return json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})


RESOURCES = [
    ResourceSpec(
        "test://static-text",
        "static-text",
        "Static text",
        "A static text resource for testing",
        "text/plain",
        _fixed("This is the content of the static text resource."),
    ),
    ResourceSpec(
        "test://static-binary",
        "static-binary",
        "Static binary",
        "A static binary resource (image) for testing",
        "image/png",
        _fixed(base64.b64decode(IMAGE)),
    ),
    ResourceSpec(
        "test://watched-resource",
        "watched-resource",
        "Watched resource",
        "A resource that can be subscribed to for updates",
        "text/plain",
        _fixed("Watched resource content"),
    ),
]
TEMPLATE = TemplateSpec(
    "test://template/{id}/data",
    "template",
    "Template",
    "A resource template with parameter substitution",
    "application/json",
    _template_data,
)


def _user(*content: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": block} for block in content]


async def _simple(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    return _user({"type": "text", "text": "This is a simple prompt for testing."})


async def _with_arguments(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    return _user(
        {"type": "text", "text": f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"}
    )


async def _with_resource(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    resource = {
        "uri": args["resourceUri"],
        "mimeType": "text/plain",
        "text": "Embedded resource content for testing.",
    }
    return _user(
        {"type": "resource", "resource": resource},
        {"type": "text", "text": "Please process the embedded resource above."},
    )


async def _with_image(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    image = {"type": "image", "data": IMAGE, "mimeType": "image/png"}
    return _user(image, {"type": "text", "text": "Please analyze the image above."})


async def _input_required(ctx: ToolContext, args: dict[str, str]) -> Any:
    answer = responses().get("user_context")
    if isinstance(answer, ElicitResult):
        return _user(
            {
                "type": "text",
                "text": f"Use the following context: {(answer.content or {}).get('context', '?')}",
            }
        )
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    question = ElicitRequest(
        params=ElicitRequestFormParams(message="What context should the prompt use?", requested_schema=schema)
    )
    return MCPAnswer(result=InputRequiredResult(input_requests={"user_context": question}))


PROMPTS = [
    PromptSpec("test_simple_prompt", "Simple prompt", "A simple prompt without arguments", (), _simple),
    PromptSpec(
        "test_prompt_with_arguments",
        "Prompt with arguments",
        "A prompt with required arguments",
        (PromptArgument("arg1", "First test argument"), PromptArgument("arg2", "Second test argument")),
        _with_arguments,
    ),
    PromptSpec(
        "test_prompt_with_embedded_resource",
        "Prompt with an embedded resource",
        "A prompt that includes an embedded resource",
        (PromptArgument("resourceUri", "URI of the resource to embed"),),
        _with_resource,
    ),
    PromptSpec(
        "test_prompt_with_image",
        "Prompt with an image",
        "A prompt that includes image content",
        (),
        _with_image,
    ),
    PromptSpec(
        "test_input_required_result_prompt",
        "Prompt asking for input",
        "Tests InputRequiredResult from prompts/get (SEP-2322)",
        (),
        _input_required,
    ),
]


def register(registry: Registry) -> None:
    for fn in TOOLS:
        spec = registry.add_tool(fn)
        if spec.name == "json_schema_2020_12_tool":
            spec.__dict__["input_schema"] = (
                SCHEMA_2020_12  # the cached schema, replaced: keywords pydantic never writes
            )
    for resource in RESOURCES:
        registry.add_resource(resource)
    registry.add_template(TEMPLATE)
    for prompt in PROMPTS:
        registry.add_prompt(prompt)


def conformance_registry(settings: Settings) -> Registry:
    """The service's registry plus the fixtures: what the conformance test serves."""
    registry = build_registry(settings)
    register(registry)
    return registry
