"""The metrics middleware: one observation per HTTP request, by route template and model.

The route template comes from ``scope["route"]`` (set by the router). A request answered before
routing (413, a bad ``API-Version``) is matched against the routes afterwards, so it is still counted
under its template; a path that matches nothing is counted as ``(unmatched)`` to keep memory bounded.

The model of a request is ``scope["state"]["model"]``: a route sets it with ``request.state.model =
"<model id>"`` before it starts the response (the gateway does so for chat completions).
"""

from __future__ import annotations

import time

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.metrics import Metrics

MODEL_KEY = "model"
UNMATCHED = "(unmatched)"


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics, routes_app: object) -> None:
        # routes_app is the FastAPI app; its routes are read at call time, as routers land late.
        self.app, self.metrics, self.routes_app = app, metrics, routes_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        observed = False

        async def timed_send(message: Message) -> None:
            nonlocal observed
            if message["type"] == "http.response.start" and not observed:
                observed = True
                self._observe(scope, message["status"], time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        except BaseException:
            if not observed:  # the server's last-resort handler answers 500
                observed = True
                self._observe(scope, 500, time.perf_counter() - started)
            raise

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("route")
        template = getattr(route, "path_format", None) or getattr(route, "path", None)
        if template is None:
            # A 404 from the router matched nothing; scanning every route again would only cost time.
            template = UNMATCHED if status == 404 else self._match(scope)
        state = scope.get("state")
        model = state.get(MODEL_KEY) if state else None
        self.metrics.observe(
            scope["method"], template, model if isinstance(model, str) else None, status, seconds
        )

    def _match(self, scope: Scope) -> str:
        from fastapi.routing import iter_route_contexts

        routes = getattr(self.routes_app, "routes", [])
        partial = None
        for context in iter_route_contexts(routes):
            try:
                match, _ = context.matches(scope)
            except Exception:  # a route that cannot judge this scope does not match it
                continue
            if match == Match.FULL:
                return context.path_format or UNMATCHED
            if match == Match.PARTIAL and partial is None:
                partial = context.path_format
        return partial or UNMATCHED
