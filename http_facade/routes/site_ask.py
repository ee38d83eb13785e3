"""``/api/ask.php`` (spec 4.5, 6.2): one core (agent_server/knowledge/ask.py), plain JSON or server-sent events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from agent_server.knowledge import ask as core
from agent_server.policies.ratelimit import Usage
from agent_server.site.ask_stream import NLWEB_VERSION, Event, open_stream
from http_facade.deps import SettingsDep
from http_facade.idempotency import streaming_requested
from http_facade.routes.site_common import SiteDep, headers_route, per_ip_limit
from wellknown.event_stream import streamed_answer

PATH = "/api/ask.php"
router = APIRouter(tags=["site"], route_class=headers_route({"NLWeb-Version": NLWEB_VERSION}))
EVENTS = ["start", "token", "result", "complete"]


class AskBody(BaseModel):
    """Spec 2.7."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000, description="The question, in plain words.")


@router.get(PATH, summary="How to call ask: schema, examples, streaming")
async def describe(site: SiteDep, settings: SettingsDep) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    policy = site.policies.ask
    return {
        "endpoint": base + PATH,
        "method": "POST",
        "description": "Answers a question: FAQ quick path, the weather tool for weather questions, "
        "otherwise a language model with the FAQ and knowledge base as context. Names its route and sources.",
        "nlweb_version": NLWEB_VERSION,
        "request_schema": AskBody.model_json_schema(),
        "response_schema": core.Answer.model_json_schema(),
        "examples": [
            {"request": {"query": "How do I rotate my API key?"}, "route": "faq"},
            {"request": {"query": "What is the weather in Berlin?"}, "route": "weather"},
            {"request": {"query": "What would you recommend for a small startup team?"}, "route": "llm"},
        ],
        "streaming": {
            "request_headers": {"Prefer": "streaming", "Accept": "text/event-stream"},
            "media_type": "text/event-stream",
            "events": EVENTS,
            "event_data": {
                "start": "{query_id, query, route, nlweb_version}",
                "token": "{text}: a piece of the answer, in order",
                "result": "the same object as the non-streaming answer, plus query_id",
                "complete": "{query_id, status: ok | error}; preceded by an 'error' event on failure",
            },
        },
        "limits": {
            "RateLimit-Policy": f'"{policy.name}";q={policy.limit};w={policy.window}',
            "site_model_budget": {
                "calls_per_minute": settings.site_llm_requests_per_minute,
                "tokens_per_day": settings.site_llm_tokens_per_day,
                "when_spent": "503 SITE_BUDGET_EXHAUSTED with Retry-After on the llm route; FAQ and weather keep working",
            },
        },
        "idempotency": "Optional Idempotency-Key (UUID v4) on the non-streaming POST replays the answer for 24 h.",
    }


def _sse(events: AsyncIterator[Event]) -> AsyncIterator[ServerSentEvent]:
    async def generate() -> AsyncIterator[ServerSentEvent]:
        async for name, data in events:
            yield ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=name)

    return generate()


@router.post(
    PATH,
    summary="Ask a question (JSON, or SSE with Prefer: streaming)",
    response_model=None,
    openapi_extra={"responses": streamed_answer("The answer, or with Prefer: streaming its events.")},
)
async def ask(
    request: Request,
    body: AskBody,
    site: SiteDep,
    settings: SettingsDep,
    usage: Annotated[Usage, Depends(per_ip_limit("ask"))],
) -> dict[str, Any] | EventSourceResponse:
    s = site.services
    if streaming_requested(request):
        events = await open_stream(
            body.query, s.knowledge, s.weather, site.llm, settings.public_base_url.rstrip("/")
        )
        headers = {**usage.headers(), "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return EventSourceResponse(_sse(events), headers=headers, ping=15)
    home = s.knowledge.pack.company.headquarters.city
    answer = await core.answer(body.query, s.knowledge, s.weather, site.llm, home)
    return answer.model_dump(mode="json")
