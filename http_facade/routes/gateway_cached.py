"""POST /v1/chat/completions and POST /v1/embeddings with the response cache in front of the relay.

``create_app`` registers these instead of ``gateway_v1.add_chat_route`` and
``gateway_embeddings.router`` when AGENTGATE_RESPONSE_CACHE is on; with it off the plain routes
serve, and the chat hot path does not look at a cache at all. Same paths, summaries, bodies and
operation ids; the answers add ``X-Agentgate-Cache: hit|miss|bypass``.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request, Response

from agent_server.gateway.bodies import read_call
from agent_server.llm.types import CHAT, EMBEDDINGS, Call
from http_facade.routes import gateway_embeddings, gateway_v1
from http_facade.routes.gateway_relay import DirectRoute, request_body
from http_facade.routes.gateway_surface import Surface, serve
from http_facade.routes.gateway_v1 import CHAT_COMPLETIONS


def _read_chat(raw: bytes, created: int) -> Call:
    return read_call(CHAT, raw, created)


def _read_embeddings(raw: bytes, created: int) -> Call:
    return read_call(EMBEDDINGS, raw, created)


CHAT_SURFACE = Surface(CHAT_COMPLETIONS, _read_chat)
EMBEDDINGS_SURFACE = Surface(gateway_embeddings.ENDPOINT, _read_embeddings)
router = APIRouter(tags=["gateway"], route_class=DirectRoute)


async def chat_completions(request: Request) -> Response:
    return await serve(request, CHAT_SURFACE, cache=request.app.state.response_cache)


def add_chat_route(app: FastAPI) -> None:
    """The cached chat route on the app itself, first, as ``gateway_v1.add_chat_route`` places it."""
    gateway_v1.add_chat_route(app, chat_completions)


@router.post(
    "/v1/embeddings",
    summary="Create embeddings of text or token arrays",
    openapi_extra=request_body(EMBEDDINGS),
)
async def create(request: Request) -> Response:
    return await serve(request, EMBEDDINGS_SURFACE, cache=request.app.state.response_cache)
