"""How ``/openapi.json`` describes a ``text/event-stream`` answer: one schema per event.

Before OpenAPI 3.2 (``itemSchema``) the ``schema`` of a sequential media type describes each item,
so a stream is described by its event as an EventSource client reads it (WHATWG HTML, server-sent
events): the joined ``data`` lines, the ``event`` type ("message" when the server names none), and
the optional ``id`` and ``retry``. What ``data`` holds per event type is each operation's own text.
"""

from __future__ import annotations

from typing import Any

SSE = "text/event-stream"
SERVER_SENT_EVENT: dict[str, Any] = {
    "title": "ServerSentEvent",
    "description": (
        "One event of a text/event-stream. `data` is a JSON text as a rule; an OpenAI-style stream "
        "ends with the literal [DONE]."
    ),
    "type": "object",
    "required": ["data"],
    "properties": {
        "event": {"type": "string", "description": "The event type; absent means message."},
        "data": {"type": "string"},
        "id": {"type": "string"},
        "retry": {"type": "integer", "minimum": 0},
    },
}
# The media type object of a streamed answer, for ``responses.<status>.content``.
EVENT_STREAM: dict[str, Any] = {"schema": {"$ref": "#/components/schemas/ServerSentEvent"}}


def streamed_answer(description: str = "The answer as server-sent events.") -> dict[str, Any]:
    """``openapi_extra`` (or ``responses``) piece adding the event stream to a route's 200."""
    return {"200": {"description": description, "content": {SSE: EVENT_STREAM}}}
