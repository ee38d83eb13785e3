"""Conformance fixture tools, part two: 2026-07-28 input requests, list-change triggers and schemas."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.types import (
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ErrorData,
    InputRequest,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
)
from pydantic import Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.mcp import exchange
from agent_server.mcp.exchange import MCPAnswer
from tests.mcp.conformance_tools import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ask,
    mcp,
    name_question,
    sampling,
    text,
)

# Input requests (2026-07-28 multi-round trips)


def responses() -> dict[str, Any]:
    return dict(mcp().input_responses or {})


@tool(title="Input required: elicitation")
async def test_input_required_result_elicitation(ctx: ToolContext) -> MCPAnswer:
    """Tests InputRequiredResult with a single elicitation request."""
    answer = responses().get("user_name")
    if isinstance(answer, ElicitResult):
        return text(f"Hello, {(answer.content or {}).get('name', 'stranger')}!")
    return ask(user_name=name_question())


@tool(title="Streaming elicitation")
async def test_streaming_elicitation(ctx: ToolContext) -> MCPAnswer:
    """Asks for input on the response stream the 2026-07-28 way: an input request, never a request."""
    await exchange.report_progress(mcp(), 1, 2, "asking the client")
    if isinstance(responses().get("user_name"), ElicitResult):
        return text("thanks")
    return ask(user_name=name_question())


@tool(title="Input required: sampling")
async def test_input_required_result_sampling(ctx: ToolContext) -> MCPAnswer:
    """Tests InputRequiredResult with a single sampling request."""
    answer = responses().get("capital_question")
    if isinstance(answer, CreateMessageResult):
        said = answer.content.text if answer.content.type == "text" else "?"
        return text(f"Model said: {said}")
    return ask(capital_question=sampling("What is the capital of France?"))


@tool(title="Input required: roots")
async def test_input_required_result_list_roots(ctx: ToolContext) -> MCPAnswer:
    """Tests InputRequiredResult with a single roots/list request."""
    answer = responses().get("client_roots")
    if isinstance(answer, ListRootsResult):
        return text(f"Client exposed {len(answer.roots)} root(s).")
    return ask(client_roots=ListRootsRequest())


def _confirm() -> ElicitRequest:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    return ElicitRequest(params=ElicitRequestFormParams(message="Please confirm", requested_schema=schema))


@tool(title="Input required: request state")
async def test_input_required_result_request_state(ctx: ToolContext) -> MCPAnswer:
    """Tests requestState round-tripping in the InputRequiredResult flow."""
    if "confirm" in responses() and mcp().request_state == "request-state-nonce":
        return text("state-ok: confirmation received")
    return MCPAnswer(
        result=InputRequiredResult(
            input_requests={"confirm": _confirm()}, request_state="request-state-nonce"
        )
    )


@tool(title="Input required: several inputs")
async def test_input_required_result_multiple_inputs(ctx: ToolContext) -> MCPAnswer:
    """Tests InputRequiredResult carrying elicitation, sampling and roots requests together."""
    if {"user_name", "greeting", "client_roots"} <= responses().keys():
        return text("All inputs received.")
    requests = {
        "user_name": name_question(),
        "greeting": sampling("Generate a greeting", 50),
        "client_roots": ListRootsRequest(),
    }
    return MCPAnswer(result=InputRequiredResult(input_requests=requests, request_state="multiple-inputs"))


@tool(title="Input required: three rounds")
async def test_input_required_result_multi_round(ctx: ToolContext) -> MCPAnswer:
    """Tests a three-round InputRequiredResult flow with evolving requestState."""
    state = json.loads(mcp().request_state or '{"round": 0}')
    given = responses()
    if state["round"] == 1 and isinstance(given.get("step1"), ElicitResult):
        name = (given["step1"].content or {}).get("name")
        schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
        question = ElicitRequest(
            params=ElicitRequestFormParams(
                message="Step 2: What is your favorite color?", requested_schema=schema
            )
        )
        return MCPAnswer(
            result=InputRequiredResult(
                input_requests={"step2": question}, request_state=json.dumps({"round": 2, "name": name})
            )
        )
    if state["round"] == 2 and isinstance(given.get("step2"), ElicitResult):
        return text(f"{state.get('name')} likes {(given['step2'].content or {}).get('color')}.")
    first = {"step1": name_question("Step 1: What is your name?")}
    return MCPAnswer(result=InputRequiredResult(input_requests=first, request_state=json.dumps({"round": 1})))


@tool(title="Input required: tampered state")
async def test_input_required_result_tampered_state(ctx: ToolContext) -> MCPAnswer:
    """Tests that the server rejects a tampered requestState echo (the SDK's seal does)."""
    state = mcp().request_state
    if state is None:
        return MCPAnswer(
            result=InputRequiredResult(input_requests={"confirm": _confirm()}, request_state="round-1")
        )
    return text(f"state-ok: {state}")


@tool(title="Input required: capabilities")
async def test_input_required_result_capabilities(ctx: ToolContext) -> MCPAnswer:
    """Tests that inputRequests only include methods the client declared support for."""
    caps = mcp().client_capabilities
    requests: dict[str, InputRequest] = {}
    if caps is None or caps.sampling is not None:
        requests["sample"] = sampling("Say hello", 50)
    if caps is None or caps.elicitation is not None:
        requests["ask"] = name_question()
    return MCPAnswer(result=InputRequiredResult(input_requests=requests, request_state="capability-gated"))


@tool(title="Missing capability")
async def test_missing_capability(ctx: ToolContext) -> MCPAnswer:
    """Needs the client's sampling capability: a protocol error (-32021) without it."""
    caps = mcp().client_capabilities
    if caps is None or caps.sampling is None:
        data = {"requiredCapabilities": {"sampling": {}}}
        message = "This tool requires the client 'sampling' capability"
        return MCPAnswer(error=ErrorData(code=MISSING_REQUIRED_CLIENT_CAPABILITY, message=message, data=data))
    return text("Client declared sampling capability; proceeding.")


# Lists and schemas


@tool(title="List change trigger (tools)")
async def test_trigger_tool_change(ctx: ToolContext) -> MCPAnswer:
    """Announces a tool list change to subscriptions/listen streams (SEP-2575)."""
    await mcp().notify_tools_changed()
    return text("tool list changed")


@tool(title="List change trigger (prompts)")
async def test_trigger_prompt_change(ctx: ToolContext) -> MCPAnswer:
    """Announces a prompt list change to subscriptions/listen streams (SEP-2575)."""
    await mcp().notify_prompts_changed()
    return text("prompt list changed")


@tool(title="Mcp-Param header")
async def test_x_mcp_header(
    ctx: ToolContext,
    region: Annotated[
        str,
        Field(
            description="Mirrored into the Mcp-Param-Region header",
            json_schema_extra={"x-mcp-header": "Region"},
        ),
    ] = "<none>",
) -> MCPAnswer:
    """Tests SEP-2243 Mcp-Param-* server-side validation."""
    return text(f"region={region}")


@tool(title="JSON Schema 2020-12")
async def json_schema_2020_12_tool(ctx: ToolContext) -> MCPAnswer:
    """Tests JSON Schema 2020-12 keyword preservation in tools/list (the input schema is set below)."""
    return text("json_schema_2020_12_tool")


SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


TOOLS = [
    test_input_required_result_elicitation,
    test_streaming_elicitation,
    test_input_required_result_sampling,
    test_input_required_result_list_roots,
    test_input_required_result_request_state,
    test_input_required_result_multiple_inputs,
    test_input_required_result_multi_round,
    test_input_required_result_tampered_state,
    test_input_required_result_capabilities,
    test_missing_capability,
    test_trigger_tool_change,
    test_trigger_prompt_change,
    test_x_mcp_header,
    json_schema_2020_12_tool,
]
