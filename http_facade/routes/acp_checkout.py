"""ACP checkout sessions over REST (Agentic Commerce Protocol 2026-04-17, docs/agentic-commerce.md)
under the contract's route group ``/agentic_commerce``: the spec's paths, headers and flat ``Error``
object. Everything but HTTP lives in agent_server/commerce (protocol.py is shared with the MCP tools).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from agent_server.commerce.feed import FEED_ID, feed_metadata, products
from agent_server.commerce.protocol import Answer, Meta, acp_error, inlined
from agent_server.commerce.wiring import API_BASE, commerce_of
from agent_server.foundation.errors import AgentError, ValidationFailed

router = APIRouter(prefix=API_BASE, tags=["agentic commerce"])
SPEC = "Agentic Commerce Protocol 2026-04-17; request and response bodies as its OpenAPI defines them."
ERROR = {"application/json": {"schema": inlined("Error")}}
ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"description": "The spec's Error object: {type, code, message, param?}.", "content": ERROR},
    "5XX": {
        "description": "The spec's Error object (processing_error or service_unavailable).",
        "content": ERROR,
    },
}


def answers(status: int, name: str) -> dict[int | str, dict[str, Any]]:
    """The spec's schema for the success status, and its Error for the rest."""
    body = {"application/json": {"schema": {"type": "object", **inlined(name)}}}
    return {status: {"description": f"The ACP {name}.", "content": body}, **ERRORS}


def meta_of(request: Request) -> Meta:
    headers = request.headers
    return Meta(
        api_version=headers.get("api-version"),
        idempotency_key=headers.get("idempotency-key"),
        request_id=headers.get("request-id"),
        signature=headers.get("signature"),
        timestamp=headers.get("timestamp"),
    )


def respond(answer: Answer, meta: Meta, post: bool) -> JSONResponse:
    headers = dict(answer.headers)
    if post and meta.idempotency_key:
        headers["Idempotency-Key"] = meta.idempotency_key
    if answer.replayed:
        headers["Idempotent-Replayed"] = "true"
    if meta.request_id:
        headers["Request-Id"] = meta.request_id
    return JSONResponse(answer.body, status_code=answer.status, headers=headers)


async def serve(request: Request, operation: str, session_id: str | None = None) -> JSONResponse:
    meta, post = meta_of(request), request.method == "POST"
    commerce = commerce_of(request.app.state.services)
    try:
        platform = await commerce.platforms.authenticate(request.headers.get("authorization"))
        body = None
        if post:
            raw = await request.body()
            try:
                body = json.loads(raw) if raw.strip() else None
            except ValueError:
                raise ValidationFailed(
                    "The request body is not valid JSON.", code="invalid", param="$"
                ) from None
    except AgentError as exc:
        return respond(acp_error(exc), meta, post)
    answer = await commerce.protocol.call(platform, operation, meta, session_id, body, key_required=True)
    return respond(answer, meta, post)


@router.post(
    "/checkout_sessions",
    status_code=201,
    response_model=None,
    summary="Create a checkout session (ACP createCheckoutSession)",
    description=SPEC,
    responses=answers(201, "CheckoutSession"),
)
async def create_checkout_session(request: Request) -> JSONResponse:
    return await serve(request, "create")


@router.get(
    "/checkout_sessions/{checkout_session_id}",
    response_model=None,
    summary="Retrieve a checkout session (ACP getCheckoutSession)",
    description=SPEC,
    responses=answers(200, "CheckoutSession"),
)
async def get_checkout_session(checkout_session_id: str, request: Request) -> JSONResponse:
    return await serve(request, "get", checkout_session_id)


@router.post(
    "/checkout_sessions/{checkout_session_id}",
    response_model=None,
    summary="Update a checkout session (ACP updateCheckoutSession)",
    description=SPEC,
    responses=answers(200, "CheckoutSession"),
)
async def update_checkout_session(checkout_session_id: str, request: Request) -> JSONResponse:
    return await serve(request, "update", checkout_session_id)


@router.post(
    "/checkout_sessions/{checkout_session_id}/complete",
    response_model=None,
    summary="Pay with a delegated payment token and place the order (ACP completeCheckoutSession)",
    description=SPEC,
    responses=answers(200, "CheckoutSessionWithOrder"),
)
async def complete_checkout_session(checkout_session_id: str, request: Request) -> JSONResponse:
    return await serve(request, "complete", checkout_session_id)


@router.post(
    "/checkout_sessions/{checkout_session_id}/cancel",
    response_model=None,
    summary="Cancel a checkout session (ACP cancelCheckoutSession)",
    description=SPEC,
    responses=answers(200, "CheckoutSession"),
)
async def cancel_checkout_session(checkout_session_id: str, request: Request) -> JSONResponse:
    return await serve(request, "cancel", checkout_session_id)


@router.get(
    "/orders/{order_id}",
    response_model=None,
    summary="An order's permalink: the ACP Order a completed session made (the id is the secret)",
    responses=answers(200, "Order"),
)
async def order_permalink(order_id: str, request: Request) -> JSONResponse:
    commerce = commerce_of(request.app.state.services)
    try:
        return JSONResponse(await commerce.orders.view_of(order_id))
    except AgentError as exc:
        answer = acp_error(exc)
        return JSONResponse(answer.body, status_code=answer.status)


@router.get(
    "/feeds/" + FEED_ID,
    response_model=None,
    summary="The product feed's metadata (ACP feed API getFeed, read-only)",
)
async def feed() -> JSONResponse:
    return JSONResponse(feed_metadata())


@router.get(
    "/feeds/" + FEED_ID + "/products",
    response_model=None,
    summary="What agents can buy, as the ACP feed's products (public; prices in minor units)",
)
async def feed_products(request: Request) -> JSONResponse:
    services = request.app.state.services
    base_url = services.settings.public_base_url.rstrip("/")
    return JSONResponse(
        products(services.knowledge.pack, base_url), headers={"Cache-Control": "public, max-age=300"}
    )
