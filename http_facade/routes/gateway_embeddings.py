"""POST /v1/embeddings: relayed like chat completions (gateway_relay.py), metered as "embeddings"."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agent_server.llm.types import EMBEDDINGS
from http_facade.routes.gateway_relay import DirectRoute, Endpoint, relay_request, request_body

router = APIRouter(tags=["gateway"], route_class=DirectRoute)
ENDPOINT = Endpoint(EMBEDDINGS, "embeddings", "embeddings", "embeddings")


@router.post(
    "/v1/embeddings",
    summary="Create embeddings of text or token arrays",
    openapi_extra=request_body(EMBEDDINGS),
)
async def create(request: Request) -> Response:
    return await relay_request(request, ENDPOINT)
