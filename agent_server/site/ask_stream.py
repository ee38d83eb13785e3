"""Ask as a stream of events (spec 6.2): ``start``, ``token`` (many), ``result``, ``complete``.

The routing decision is the ask core's own (``ask.plan``), so streamed and plain answers agree.
Everything that can fail before the first byte (weather lookup, the site budget, the model's first
token) happens in ``open_stream`` and surfaces as an ordinary HTTP error. A failure after that is
an in-band ``error`` event (the site envelope), followed by ``complete`` with status ``error``.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import AsyncIterator
from typing import Any

from agent_server.foundation.errors import AgentError, site_envelope
from agent_server.knowledge import ask
from agent_server.knowledge.search import Knowledge
from agent_server.knowledge.weather import WeatherProvider
from agent_server.llm.types import Delta, LLMBackend

log = logging.getLogger("agentgate.ask")
Event = tuple[str, dict[str, Any]]
NLWEB_VERSION = "0.1"


def pieces(text: str) -> list[str]:
    """Word-sized token events for answers that did not come from a model."""
    return re.findall(r"\S+\s*", text) or [text]


async def open_stream(
    query: str, knowledge: Knowledge, weather: WeatherProvider, llm: LLMBackend, base_url: str = ""
) -> AsyncIterator[Event]:
    home = knowledge.pack.company.headquarters.city
    plan = ask.plan(query, knowledge, home)
    query_id = f"q_{secrets.token_hex(8)}"
    start = {"query_id": query_id, "query": query, "route": plan.route, "nlweb_version": NLWEB_VERSION}
    if plan.route == "faq":
        return _fixed(start, ask.faq_answer(query, plan))
    if plan.route == "weather" and plan.place is not None:
        return _fixed(start, await ask.weather_answer(query, plan.place, weather))
    request, sources = ask.llm_request(query, plan, knowledge)
    deltas = aiter(llm.stream(request))
    try:
        first = await anext(deltas)
    except StopAsyncIteration:
        first = Delta("")
    return _streamed(start, query, sources, first, deltas, base_url)


async def _fixed(start: dict[str, Any], answer: ask.Answer) -> AsyncIterator[Event]:
    yield "start", start
    for piece in pieces(answer.answer):
        yield "token", {"text": piece}
    yield "result", {"query_id": start["query_id"], **answer.model_dump(mode="json")}
    yield "complete", {"query_id": start["query_id"], "status": "ok"}


async def _streamed(
    start: dict[str, Any],
    query: str,
    sources: list[ask.Source],
    first: Delta,
    rest: AsyncIterator[Delta],
    base_url: str,
) -> AsyncIterator[Event]:
    text: list[str] = []
    try:
        yield "start", start
        delta: Delta | None = first
        while delta is not None:
            if delta.content:
                text.append(delta.content)
                yield "token", {"text": delta.content}
            delta = await anext(rest, None)
    except AgentError as exc:
        yield "error", site_envelope(exc, base_url)
        yield "complete", {"query_id": start["query_id"], "status": "error"}
        return
    except Exception:
        log.exception("ask stream failed")
        yield "error", site_envelope(AgentError("The answer stream failed; please retry."), base_url)
        yield "complete", {"query_id": start["query_id"], "status": "error"}
        return
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()  # a client that left mid-stream stops the upstream call too
    answer = ask.Answer(query=query, answer="".join(text), route="llm", sources=sources)
    yield "result", {"query_id": start["query_id"], **answer.model_dump(mode="json")}
    yield "complete", {"query_id": start["query_id"], "status": "ok"}
