"""The rules of the /v2 surface where they differ from /v1 (docs/gateway.md "/v2").

- ``model`` must be one the key may call, as ``GET /v2/models`` lists it: a model id that only
  matches a plan's pattern, or that the sandbox mock would answer anyway, is a 400.
- A stream always carries the usage chunk before ``data: [DONE]``.
- Every error names the request (``request_id`` in the error object), in-band stream errors too.
"""

from __future__ import annotations

from dataclasses import replace

from agent_server.foundation.errors import AgentError, ModelNotFound
from agent_server.gateway.chat import StreamStyle, error_event
from agent_server.gateway.service import Caller, Gateway
from agent_server.llm.types import Call, Chunk
from agent_server.llm.wire import DONE

CHAT_USAGE = "v2.chat"  # the usage rows' endpoint names
MODELS_USAGE = "v2.models"


async def callable_call(gateway: Gateway, caller: Caller, call: Call) -> Call:
    """The call as /v2 runs it, or ModelNotFound for a model this key may not call."""
    if await gateway.callable_model(caller, call.model) is None:
        raise ModelNotFound(
            f"The model '{call.model}' is not one this key may call; GET /v2/models lists them.",
            param="model",
        )
    if call.stream and not call.include_usage:
        return replace(call, include_usage=True)
    return call


def with_request_id(err: AgentError, request_id: str) -> AgentError:
    err.extra["request_id"] = request_id
    return err


def stream_style(request_id: str) -> StreamStyle:
    """Chat streams as on /v1, their in-band error naming the request."""

    def error(err: AgentError, last: Chunk | None) -> bytes:
        return error_event(with_request_id(err, request_id), last)

    return StreamStyle(error, DONE)
