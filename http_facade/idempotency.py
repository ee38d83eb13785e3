"""``IdempotentRoute``: the one HTTP binding of agent_server/policies/idempotency.py for mutating routes.

A router built with ``APIRouter(route_class=IdempotentRoute)`` gives every POST, PUT, PATCH and
DELETE route the Idempotency-Key behaviour; GET and HEAD pass through. The wrapper runs before the
route's dependencies, so a replay costs no rate-limit hit and repeats no side effect.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from agent_server.foundation.errors import AgentError
from agent_server.policies.idempotency import (
    HEADER,
    REPLAYED_HEADER,
    IdempotencyStore,
    StoredResponse,
    body_digest,
    parse_key,
    should_store,
)
from http_facade.errors import render_error, validation_error

_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def streaming_requested(request: Request) -> bool:
    """Ask's SSE form (``Prefer: streaming`` + ``Accept: text/event-stream``) is not replayable."""
    return "streaming" in request.headers.get("prefer", "").lower() and "text/event-stream" in (
        request.headers.get("accept", "").lower()
    )


def _digest(request: Request, body: bytes) -> str:
    """The body fingerprint plus path and query parameters: a key names one exact request."""
    params = {"path": request.path_params, "query": sorted(request.query_params.multi_items())}
    return hashlib.sha256(f"{json.dumps(params, sort_keys=True)}\n{body_digest(body)}".encode()).hexdigest()


class IdempotentRoute(APIRoute):
    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        operation = f"{'|'.join(sorted(self.methods or ()))} {self.name}"

        async def idempotent(request: Request) -> Response:
            raw = request.headers.get(HEADER)
            if raw is None or request.method in _SAFE or streaming_requested(request):
                return await handler(request)
            key = parse_key(raw)
            store: IdempotencyStore = request.app.state.site.idempotency
            scope_key = f"{operation}:{key}"
            stored = await store.claim(scope_key, _digest(request, await request.body()))
            if stored is not None:
                return Response(
                    stored.body,
                    stored.status_code,
                    headers={REPLAYED_HEADER: "true"},
                    media_type=stored.content_type,
                )
            base_url = request.app.state.services.settings.public_base_url.rstrip("/")
            try:
                response = await handler(request)
            except AgentError as exc:  # rendered here, so an error answer is stored like any other
                response = render_error(exc, request.url.path, base_url)
            except RequestValidationError as exc:
                response = render_error(validation_error(list(exc.errors())), request.url.path, base_url)
            except BaseException:
                await store.release(scope_key)
                raise
            body = getattr(response, "body", None)
            if isinstance(body, bytes) and should_store(response.status_code):
                content_type = response.headers.get("content-type", "application/json")
                await store.complete(
                    scope_key, StoredResponse(response.status_code, body.decode(), content_type)
                )
            else:
                await store.release(scope_key)
            return response

        return idempotent
