"""Errors of the Messages API in Anthropic's shape: ``{"type": "error", "error": {"type", "message"}}``.

The ``error.type`` follows the HTTP status as Anthropic's API does, so its SDK raises the class it
would raise against Anthropic (``AuthenticationError``, ``RateLimitError``, ...). A stream that fails
after it started ends with an ``error`` event of the same shape (Anthropic sends no ``[DONE]``).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from agent_server.foundation.errors import AgentError
from agent_server.gateway.chat import StreamStyle
from agent_server.llm.types import Chunk
from agent_server.llm.wire import sse

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
}
SERVER_ERROR = "api_error"


def anthropic_error(err: AgentError) -> dict[str, Any]:
    kind = ERROR_TYPES.get(
        err.http_status, SERVER_ERROR if err.http_status >= 500 else "invalid_request_error"
    )
    message = err.message
    if err.param and err.param not in message:  # the shape has no param: the message names the field
        message = f"{err.param}: {message}"
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_event(err: AgentError, last: Chunk | None = None) -> bytes:
    return sse(to_json(anthropic_error(err)), b"error")


ANTHROPIC_STREAM = StreamStyle(error_event, b"")
