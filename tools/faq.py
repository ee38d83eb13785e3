from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool


class FaqMatch(BaseModel):
    id: str
    question: str
    answer: str
    score: float = Field(description="BM25 relevance; higher is better, 0 is no overlap.")


class FaqResults(BaseModel):
    query: str
    results: list[FaqMatch]


@tool(title="Search the FAQ")
async def faq_lookup(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=500, description="Words to search the FAQ for.")],
    limit: Annotated[int, Field(ge=1, le=10, description="How many entries to return.")] = 3,
) -> FaqResults:
    """Search the frequently asked questions and return the best matches, ranked, with scores.

    Use it to quote an official answer on keys, plans, limits, billing, security or support.
    An empty result list means no entry matches the words of the query.
    """
    by_id = {entry.id: entry for entry in ctx.services.knowledge.pack.faq}
    hits = ctx.services.knowledge.search_faq(query, limit)
    matches = [
        FaqMatch(id=h.passage.id, question=by_id[h.passage.id].question, answer=h.passage.text, score=h.score)
        for h in hits
    ]
    return FaqResults(query=query, results=matches)
