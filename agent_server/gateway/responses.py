"""The Responses API's state: responses stored per tenant, chained by ``previous_response_id``.

Per ``POST /v1/responses`` request (``StoredResponses``, one per request):

- ``chain``, after the body is read: a ``previous_response_id`` of this tenant's stored responses
  puts that response's conversation (its input items, then its output items) before the request's
  own input; the upstream gets the whole conversation and no ``previous_response_id`` (the id is
  ours, not the upstream's). An unknown id, or another tenant's, is a 400 naming the field, as
  OpenAI answers. ``instructions`` are not carried over, as OpenAI does.
- ``keep``, after the relay: a response whose ``store`` is not false is saved with the
  conversation it answered (JSON answer: before it is returned; stream: when its final
  ``response.completed`` / ``response.incomplete`` event arrives, before that event is sent), so a
  client may chain on it or read it as soon as it has it. A chained answer names its
  ``previous_response_id``. A failure to save is logged; the answer is still delivered.

Input items are stored in OpenAI's shape: a string input is one user message with an
``input_text`` part, and every item without an id gets one. Nothing here runs on the other
endpoints: chat completions never touch the store.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from pydantic_core import to_json

from agent_server.foundation.errors import ValidationFailed
from agent_server.gateway.chat import EventSource
from agent_server.gateway.relay import Streamed
from agent_server.gateway.response_store import ResponseStore, Stored
from agent_server.gateway.service import Caller
from agent_server.llm.types import Answer, Call, Chunk
from agent_server.llm.wire import new_id, sse

log = logging.getLogger("agentgate.gateway")
FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})
# Items a client writes (their ids, if any, mean nothing upstream); the others come from a model.
INPUT_SIDE = frozenset({"function_call_output"})
ID_PREFIXES = {"message": "msg_", "function_call_output": "fco_", "function_call": "fc_"}


class StoredResponses:
    __slots__ = ("history", "items", "previous", "store")

    def __init__(self, store: ResponseStore) -> None:
        self.store = store
        self.previous: str | None = None
        self.history: list[dict[str, Any]] = []
        self.items: list[dict[str, Any]] = []

    async def chain(self, caller: Caller, call: Call) -> Call:
        previous = call.body.get("previous_response_id")
        current = as_items(call.body.get("input"))
        if not previous:
            self.items = input_items(current)
            return call
        stored = await self.store.get(caller.principal.tenant_id, previous)
        if stored is None:
            raise ValidationFailed(
                f"No stored response has the id '{previous}' (or it expired); send a response id "
                "this organisation created with store not false.",
                code="previous_response_not_found",
                param="previous_response_id",
            )
        self.previous, self.history = previous, conversation(stored)
        self.items = [*self.history, *input_items(current)]
        body = {k: v for k, v in call.body.items() if k != "previous_response_id"}
        body["input"] = [*(upstream_item(item) for item in self.history), *current]
        return replace(call, body=body)

    async def keep(self, caller: Caller, call: Call, result: Answer | Streamed) -> Answer | EventSource:
        """The answer or the stream the client gets, the response stored (unless ``store: false``)."""
        if isinstance(result, Answer):
            if not _is_response(result.data):
                return result
            response = self._final(call, result.data)
            if self.previous is not None:
                result = Answer(to_json(response), response, result.usage)
            if call.body.get("store") is not False:
                await self._save(caller, response)
            return result
        return KeptStream(self, caller, call, result)

    def _final(self, call: Call, response: dict[str, Any]) -> dict[str, Any]:
        """The response as stored and returned: our public model id, the chain it continues."""
        return {**response, "model": call.model, "previous_response_id": self.previous}

    async def _save(self, caller: Caller, response: dict[str, Any]) -> None:
        principal = caller.principal
        try:
            await self.store.save(principal.tenant_id, principal.key_id, response, self.items)
        except Exception:
            log.exception("storing response %s failed; the answer is delivered unstored", response.get("id"))


class KeptStream:
    """A Responses stream whose final response is stored before the client sees that event."""

    def __init__(self, kept: StoredResponses, caller: Caller, call: Call, streamed: EventSource) -> None:
        self.kept, self.caller, self.call, self.streamed = kept, caller, call, streamed

    async def batches(self) -> AsyncIterator[list[Chunk]]:
        kept, call = self.kept, self.call
        store = call.body.get("store") is not False
        async with aclosing(self.streamed.batches()) as batches:
            async for batch in batches:
                if kept.previous is not None:
                    batch = [self._named(chunk) for chunk in batch]
                for chunk in batch:
                    data = chunk.data
                    if store and data is not None and data.get("type") in FINAL_EVENTS:
                        await kept._save(self.caller, kept._final(call, data["response"]))
                yield batch

    def _named(self, chunk: Chunk) -> Chunk:
        """An event carrying the response object, naming the response it continues."""
        data = chunk.data
        if data is None or not isinstance(data.get("response"), dict):
            return chunk
        data = {**data, "response": self.kept._final(self.call, data["response"])}
        return chunk._replace(raw=sse(to_json(data), str(data.get("type", "")).encode() or None), data=data)


def _is_response(data: Any) -> bool:
    return isinstance(data, dict) and data.get("object") == "response" and isinstance(data.get("id"), str)


def as_items(source: Any) -> list[Any]:
    """The request's input as a list: a string is one user message, as OpenAI reads it."""
    if isinstance(source, str):
        return [{"role": "user", "content": source}]
    return list(source) if isinstance(source, list) else []


def input_items(items: list[Any]) -> list[dict[str, Any]]:
    """Items in OpenAI's stored shape: messages with typed parts and a status, every item an id."""
    shaped = []
    for item in items:
        if not isinstance(item, dict):
            continue
        item = dict(item)
        kind = item.setdefault("type", "message") if "role" in item else item.get("type")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, str):
                part = "output_text" if item.get("role") == "assistant" else "input_text"
                item["content"] = [{"type": part, "text": content}]
            item.setdefault("status", "completed")
        if not isinstance(item.get("id"), str):
            item["id"] = new_id(ID_PREFIXES.get(str(kind), "item_"))
        shaped.append(item)
    return shaped


def conversation(stored: Stored) -> list[dict[str, Any]]:
    """What a stored response answered and said: its input items, then its output items."""
    output = stored.response.get("output")
    return [*stored.input_items, *(item for item in output or () if isinstance(item, dict))]


def upstream_item(item: dict[str, Any]) -> dict[str, Any]:
    """An earlier item as the upstream gets it: ids of the client's items are dropped (an upstream
    looks an id up and refuses one it never stored); a model's items keep theirs."""
    client_side = item.get("type") in INPUT_SIDE or (
        item.get("type") == "message" and item.get("role") != "assistant"
    )
    if not client_side:
        return item
    return {k: v for k, v in item.items() if k not in ("id", "status")}


def items_page(items: list[dict[str, Any]], limit: int, order: str, after: str | None) -> dict[str, Any]:
    """``GET /v1/responses/{id}/input_items``: a cursor page in OpenAI's list shape."""
    ordered = items if order == "asc" else items[::-1]
    if after is not None:
        ids = [item.get("id") for item in ordered]
        if after not in ids:
            raise ValidationFailed(
                f"after: no input item of this response has the id '{after}'.", param="after"
            )
        ordered = ordered[ids.index(after) + 1 :]
    page = ordered[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(ordered) > limit,
    }
