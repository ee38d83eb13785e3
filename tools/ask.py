from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.knowledge import ask as core


@tool(title="Ask a question", read_only=True, idempotent=False, open_world=True, timeout=30)
async def ask(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=2000, description="The question, in plain words.")],
) -> core.Answer:
    """Answer a question about this service, its products, prices and policies, or the weather.

    Use this first for any free-form question. It answers from the FAQ when it is confident,
    uses the weather tool for weather questions, and otherwise asks a language model with the
    most relevant knowledge-base passages. The answer names its route and its sources.
    """
    s = ctx.services
    return await core.answer(query, s.knowledge, s.weather, s.llm, s.knowledge.pack.company.headquarters.city)
