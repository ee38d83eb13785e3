"""Function-calling surfaces of the registry: dialects, direct calls and the capability index."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from agent_server.capabilities.projections import DIALECTS, capability_index, tool_definitions
from agent_server.foundation.errors import ValidationFailed
from http_facade.deps import PublicContextDep, RegistryDep

router = APIRouter(tags=["tools"])


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128, description="A tool name from /api/tools.php.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")


class ToolCallResult(BaseModel):
    name: str
    result: dict[str, Any]


@router.get("/api/tools.php", summary="Tool definitions in a vendor's function-calling format")
async def list_tool_definitions(
    registry: RegistryDep,
    dialect: str = Query("openai", description="openai, anthropic or gemini"),
) -> dict[str, Any]:
    if dialect not in DIALECTS:
        raise ValidationFailed(
            f"Unknown dialect '{dialect}'. Valid dialects: {', '.join(DIALECTS)}.", param="dialect"
        )
    return {"dialect": dialect, "tools": tool_definitions(registry, dialect)}  # type: ignore[arg-type]


@router.post("/api/tools/call", summary="Run a tool directly")
async def call_tool(body: ToolCall, registry: RegistryDep, ctx: PublicContextDep) -> ToolCallResult:
    result = await registry.invoke(body.name, body.arguments, ctx)
    return ToolCallResult(name=body.name, result=result.model_dump(mode="json"))


@router.get("/api/capabilities.php", summary="Every capability of the service")
async def capabilities(registry: RegistryDep) -> dict[str, Any]:
    return {"capabilities": capability_index(registry)}
