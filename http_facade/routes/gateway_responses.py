"""POST /v1/responses: relayed like chat completions (gateway_relay.py), metered as "responses"."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agent_server.gateway.chat import RESPONSES_STREAM
from agent_server.llm.types import RESPONSES
from http_facade.routes.gateway_relay import DirectRoute, Endpoint, relay_request, request_body

router = APIRouter(tags=["gateway"], route_class=DirectRoute)
ENDPOINT = Endpoint(RESPONSES, "chat", "responses", style=RESPONSES_STREAM)


@router.post(
    "/v1/responses",
    summary="Create a response (the Responses API; JSON, or its typed events with stream: true)",
    openapi_extra=request_body(RESPONSES, streamed=True),
)
async def create(request: Request) -> Response:
    return await relay_request(request, ENDPOINT)
