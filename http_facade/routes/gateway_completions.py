"""POST /v1/completions: relayed like chat completions (gateway_relay.py), metered as "completions"."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agent_server.llm.types import COMPLETIONS
from http_facade.routes.gateway_relay import DirectRoute, Endpoint, relay_request, request_body

router = APIRouter(tags=["gateway"], route_class=DirectRoute)
ENDPOINT = Endpoint(COMPLETIONS, "chat", "completions")


@router.post(
    "/v1/completions",
    summary="Create a text completion (legacy; JSON, or server-sent events with stream: true)",
    openapi_extra=request_body(COMPLETIONS, streamed=True),
)
async def create(request: Request) -> Response:
    return await relay_request(request, ENDPOINT)
