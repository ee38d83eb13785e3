"""``POST /internal/rpc``: the JSON-RPC bridge for the operator's own services (docs/internal-rpc.md).

Served only when service credentials are configured (``AGENTGATE_INTERNAL_RPC_KEYS``); otherwise the
path answers 404 like any unknown one. Never described: it is left out of ``/openapi.json`` and of
every discovery document. The route only hands the headers and raw body to the bridge, whose
signature covers the exact bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

from agent_server.capabilities.registry import Registry
from agent_server.foundation.settings import Settings
from agent_server.gateway.service import Gateway
from agent_server.internal_rpc.bridge import InternalBridge, build_internal_bridge

PATH = "/internal/rpc"


def install_internal_rpc(app: FastAPI, settings: Settings, registry: Registry, gateway: Gateway) -> None:
    bridge = build_internal_bridge(settings, registry, gateway)
    if bridge is not None:
        app.add_api_route(
            PATH,
            _endpoint(bridge),
            methods=["POST"],
            include_in_schema=False,
            summary="JSON-RPC bridge for the operator's services (signed, not public)",
        )


def _endpoint(bridge: InternalBridge) -> Callable[[Request], Awaitable[Response]]:
    async def internal_rpc(request: Request) -> Response:
        answer = await bridge.handle(
            request.headers.get("x-internal-key-id"),
            request.headers.get("x-internal-signature"),
            await request.body(),
        )
        if not answer.body:  # notifications only: nothing to answer
            return Response(status_code=answer.status, headers={"Cache-Control": "no-store"})
        return Response(
            answer.body,
            status_code=answer.status,
            media_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    return internal_rpc
