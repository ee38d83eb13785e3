"""The five tools of the ACP MCP binding (docs/mcp-binding.md of the spec, version 2026-04-17):
``{meta, id?, payload?}`` in, the ``CheckoutSession`` out. They run the same ``AcpProtocol`` as the
REST routes (agent_server/commerce/protocol.py) for the agent platform whose credential the caller
presents (``Authorization: Bearer`` on /api/mcp.php or /api/tools/call), or, on /api/mcp.php, for the
organisation of an OAuth access token with the ``commerce:checkout`` scope (its own platform,
``Platforms.for_organisation``). Failures carry the spec's ``Error`` object: as JSON-RPC error
``-32000`` with it in ``data`` over MCP (``AcpFailure``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.commerce.platforms import COMMERCE_SCOPE
from agent_server.commerce.protocol import Answer, Meta, acp_error, inlined
from agent_server.commerce.tables import AgentPlatform
from agent_server.commerce.wiring import Commerce, commerce_of
from agent_server.foundation.errors import AgentError, PermissionDenied
from agent_server.foundation.request_context import AUTHORIZATION
from agent_server.mcp import call_context
from agent_server.mcp.call_context import CALLER


class AcpFailure(AgentError):
    """An ACP ``Error``; over MCP a JSON-RPC error -32000 whose ``data`` is that object."""

    jsonrpc_code = -32000

    def __init__(self, answer: Answer) -> None:
        super().__init__(
            answer.body["message"],
            code=answer.body["code"],
            param=answer.body.get("param"),
            extra={"acp_error": answer.body},
        )
        self.http_status = answer.status


class AcpMeta(BaseModel):
    """The protocol headers as ``meta`` fields; unknown fields are ignored, as the binding asks."""

    model_config = ConfigDict(extra="ignore")

    api_version: str = Field(description="The ACP version, e.g. 2026-04-17 (the API-Version header).")
    idempotency_key: str | None = Field(default=None, max_length=255, description="Idempotency-Key.")
    request_id: str | None = Field(default=None, description="Request-Id, for correlation.")
    user_agent: str | None = None
    accept_language: str | None = None
    signature: str | None = Field(default=None, description="Signature (see docs/agentic-commerce.md).")
    timestamp: str | None = Field(default=None, description="Timestamp of a signed request (RFC 3339).")


class _SpecResult(BaseModel):
    """A checkout session exactly as the spec's schema writes it (validated there, kept as is)."""

    model_config = ConfigDict(extra="allow")
    schema_name: ClassVar[str] = "CheckoutSession"

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"type": "object", **inlined(cls.schema_name)}  # MCP wants an object schema at the top


class CheckoutSessionResult(_SpecResult):
    schema_name = "CheckoutSession"


class CheckoutSessionWithOrderResult(_SpecResult):
    schema_name = "CheckoutSessionWithOrder"


def payload_of(name: str, description: str) -> Any:
    return Annotated[dict[str, Any], WithJsonSchema(inlined(name)), Field(description=description)]


SessionId = Annotated[str, Field(min_length=1, max_length=100, description="The checkout session's id.")]
CreatePayload = payload_of("CheckoutSessionCreateRequest", "The ACP create request body.")
UpdatePayload = payload_of("CheckoutSessionUpdateRequest", "The ACP update request body.")
CompletePayload = payload_of("CheckoutSessionCompleteRequest", "The ACP complete request body.")
CancelPayload = payload_of("CancelSessionRequest", "The ACP cancel request body (optional).")


def authorization() -> str | None:
    """This request's ``Authorization``: from the SDK's request context when the call came through it
    (per request, also within a stateful session), else as the HTTP layer bound it (the fast path,
    /api/tools/call)."""
    context = call_context.current()
    if context is not None:
        try:
            headers = context.headers
        except (LookupError, ValueError, AttributeError):  # no HTTP request behind this context
            headers = None
        if headers is not None:
            return headers.get("authorization")
    return AUTHORIZATION.get()


async def buyer(commerce: Commerce) -> AgentPlatform:
    """Who buys: the organisation of an OAuth access token (only /api/mcp.php sets ``CALLER``, after
    checking the token; without the scope it answered 403 already), else the agent platform whose
    credential is the request's bearer."""
    caller = CALLER.get()
    if caller.tenant_id is None:
        return await commerce.platforms.authenticate(authorization())
    if COMMERCE_SCOPE not in caller.scopes:
        raise PermissionDenied(f"Buying needs the scope {COMMERCE_SCOPE}.", code="insufficient_scope")
    return await commerce.platforms.for_organisation(caller.tenant_id)


async def _call(
    ctx: ToolContext, operation: str, meta: AcpMeta, session_id: str | None, payload: Any
) -> dict[str, Any]:
    commerce = commerce_of(ctx.services)
    try:
        platform = await buyer(commerce)
    except AgentError as exc:
        raise AcpFailure(acp_error(exc)) from None
    answer = await commerce.protocol.call(
        platform,
        operation,
        Meta(meta.api_version, meta.idempotency_key, meta.request_id, meta.signature, meta.timestamp),
        session_id,
        payload,
        key_required=False,  # optional over MCP (the binding's header mapping)
    )
    if answer.status >= 400:
        raise AcpFailure(answer)
    return answer.body


@tool(title="Create a checkout session (ACP)", read_only=False, idempotent=False, tags=("commerce",))
async def create_checkout_session(
    ctx: ToolContext, meta: AcpMeta, payload: CreatePayload
) -> CheckoutSessionResult:
    """Start buying trainings, fixed-fee consulting packages or hardware (ACP): line_items are
    catalogue ids (one unit each), currency as the catalogue's. Needs an agent platform's credential
    or the commerce:checkout scope."""
    return CheckoutSessionResult(**await _call(ctx, "create", meta, None, payload))


@tool(title="Get a checkout session (ACP)", tags=("commerce",))
async def get_checkout_session(ctx: ToolContext, meta: AcpMeta, id: SessionId) -> CheckoutSessionResult:
    """The current state of a checkout session (ACP), with its order once completed. Needs an agent
    platform's credential or the commerce:checkout scope."""
    return CheckoutSessionResult(**await _call(ctx, "get", meta, id, None))


@tool(title="Update a checkout session (ACP)", read_only=False, idempotent=False, tags=("commerce",))
async def update_checkout_session(
    ctx: ToolContext, meta: AcpMeta, id: SessionId, payload: UpdatePayload
) -> CheckoutSessionResult:
    """Change a checkout session's items, buyer, fulfillment details (the address sets the VAT) or
    selected fulfillment options (a consulting package's booking date range is one of its
    local_delivery options) (ACP). Needs an agent platform's credential or the commerce:checkout scope."""
    return CheckoutSessionResult(**await _call(ctx, "update", meta, id, payload))


@tool(title="Complete a checkout session (ACP)", read_only=False, idempotent=False, tags=("commerce",))
async def complete_checkout_session(
    ctx: ToolContext, meta: AcpMeta, id: SessionId, payload: CompletePayload
) -> CheckoutSessionWithOrderResult:
    """Pay a checkout session with a delegated payment token and place the order (ACP). Needs an
    agent platform's credential or the commerce:checkout scope."""
    return CheckoutSessionWithOrderResult(**await _call(ctx, "complete", meta, id, payload))


@tool(title="Cancel a checkout session (ACP)", read_only=False, idempotent=False, tags=("commerce",))
async def cancel_checkout_session(
    ctx: ToolContext,
    meta: AcpMeta,
    id: SessionId,
    payload: CancelPayload = None,  # type: ignore[assignment]
) -> CheckoutSessionResult:
    """Cancel an open checkout session, optionally saying why in intent_trace (ACP). Needs an agent
    platform's credential or the commerce:checkout scope."""
    return CheckoutSessionResult(**await _call(ctx, "cancel", meta, id, payload))


ACP_TOOLS = (
    create_checkout_session,
    get_checkout_session,
    update_checkout_session,
    complete_checkout_session,
    cancel_checkout_session,
)
