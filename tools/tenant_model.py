"""The tenant tool that calls a model (docs/oauth.md, "MCP"): ``call_model``, behind the ``chat`` scope.

It is a ``/v1/chat/completions`` request in all but its transport: the caller's access token is
admitted by the gateway as on ``/v1`` (token scopes within the plan's, rate limit, budget), and the
call runs through the same ``Exchange`` (allowed models, plan, monthly quota, billing standing, the
backend, the usage row with its cost). Any refusal is the gateway's own error, with its code, which
MCP turns into a tool error the model can read.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationError

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.foundation.errors import AgentError, AuthFailed, ValidationFailed
from agent_server.foundation.request_context import AUTHORIZATION
from agent_server.gateway.bodies import read_call
from agent_server.gateway.relay import Exchange
from agent_server.gateway.service import Gateway
from agent_server.llm.types import CHAT, Answer

MODEL_CALL_SECONDS = 120.0  # a model's answer may take far longer than a report


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: Annotated[str, Field(max_length=200_000)]


class ModelUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ModelAnswer(BaseModel):
    text: str = Field(description="The model's answer.")
    model: str = Field(description="The model that answered, as the gateway names it.")
    finish_reason: str | None
    usage: ModelUsage = Field(description="Tokens counted against your plan; the request log has the cost.")


def _access_token() -> str:
    """The bearer credential of this MCP request: the access token the caller was resolved from."""
    kind, _, token = (AUTHORIZATION.get() or "").partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        raise AuthFailed("This tool answers for an organisation: connect with an OAuth access token.")
    return token.strip()


@tool(
    title="Call a model through the gateway",
    scope="chat",
    read_only=False,
    idempotent=False,
    open_world=True,
    timeout=MODEL_CALL_SECONDS,
)
async def call_model(
    ctx: ToolContext,
    model: Annotated[str, Field(min_length=1, max_length=200, description="A model id of GET /v1/models.")],
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=100)],
    max_tokens: Annotated[int | None, Field(ge=1, le=1_000_000)] = None,
) -> ModelAnswer:
    """Ask a model of your plan, billed to your organisation like a /v1/chat/completions request."""
    gateway: Gateway = ctx.services.extras["gateway"]
    token = _access_token()
    caller = await gateway.admit(token, "chat")  # the token as /v1 sees it: scopes, rate limit
    if caller.principal.tenant_id != ctx.principal.tenant_id:
        raise AuthFailed("The access token does not match the caller of this request.")
    exchange = Exchange(gateway, caller, token, "chat", None)
    body: dict[str, object] = {"model": model, "messages": [m.model_dump() for m in messages]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    try:
        call = read_call(CHAT, json.dumps(body).encode(), int(gateway.clock.now()))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise await exchange.refuse(ValidationFailed(f"Invalid request: {first['msg']}.")) from None
    except AgentError as err:
        raise await exchange.refuse(err) from None
    answer = await exchange.run(call)
    assert isinstance(answer, Answer)  # the body asks for no stream
    choice = (answer.data.get("choices") or [{}])[0]
    used = answer.usage
    return ModelAnswer(
        text=(choice.get("message") or {}).get("content") or "",
        model=str(answer.data.get("model") or model),
        finish_reason=choice.get("finish_reason"),
        usage=ModelUsage(
            prompt_tokens=used.prompt_tokens,
            completion_tokens=used.completion_tokens,
            total_tokens=used.prompt_tokens + used.completion_tokens,
        ),
    )
