"""FastAPI, with exact routes that skip what they do not use: the MCP endpoint's.

A request for an exact route passes the same middleware as every other (the last-resort 500, the
edge, the audit, the exception handlers, in Starlette's order) and then goes straight to its
endpoint. It skips the router's matching and three FastAPI wrappers the endpoint never needs: its
native telemetry (off here), its body limit (the edge limits bodies) and the exit stack of
dependencies (the endpoint has none). On a hot MCP call they cost about a twentieth of the CPU
(docs/performance.md, "MCP fast path"). Any other method on the same path goes the usual way, so
a 405 is the router's.

Its ``include_router`` adds routers' routes as built once per process (http_facade/shared_routes.py),
and ``defer`` adds a group of routes built at its first request (http_facade/deferred_routes.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.middleware import Middleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from http_facade.deferred_routes import DeferredRoutes, Install, build_all
from http_facade.shared_routes import can_share, include_shared


class ExactRoutesApp(FastAPI):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._exact: dict[str, Route] = {}
        self._exact_stack: ASGIApp | None = None

    def add_exact_route(self, route: Route) -> None:
        """Append ``route`` to the routes (for the OpenAPI document and ``url_path_for``) and serve
        its path and methods without the router."""
        self.router.routes.append(route)
        self._exact[route.path] = route

    def include_router(self, router: APIRouter, *, prefix: str = "", **options: Any) -> None:
        """Add the router's routes as built once per process (http_facade/shared_routes.py)."""
        if not can_share(router, options):
            super().include_router(router, prefix=prefix, **options)
            return
        include_shared(self, router, prefix)

    def defer(self, name: str, prefixes: tuple[str, ...], install: Install) -> DeferredRoutes:
        """Hold a place in the routes for what ``install(app)`` adds, built at the first request whose
        path starts with one of ``prefixes`` (every route the group adds must start with one)."""
        group = DeferredRoutes(self, name, prefixes, install)
        self.router.routes.append(group)
        return group

    @property
    def routes(self) -> list[BaseRoute]:
        """Every route, deferred groups built (the router matches against ``router.routes``)."""
        build_all(self)
        return self.router.routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.root_path:
            route = self._exact.get(scope["path"])
            if route is not None and route.methods is not None and scope["method"] in route.methods:
                scope["app"] = self
                # what the router would have set (the edge's metrics name the series by the route)
                scope["route"], scope["endpoint"], scope["path_params"] = route, route.endpoint, {}
                if self._exact_stack is None:
                    self._exact_stack = self._build_exact_stack()
                await self._exact_stack(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    def _build_exact_stack(self) -> ASGIApp:
        """Starlette's stack (``build_middleware_stack``) around the route's own app instead of the router."""
        error_handler = None
        handlers: dict[Any, Any] = {}
        for key, value in self.exception_handlers.items():
            if key in (500, Exception):
                error_handler = value
            else:
                handlers[key] = value
        middleware = [
            Middleware(ServerErrorMiddleware, handler=error_handler, debug=self.debug),
            *self.user_middleware,
            Middleware(ExceptionMiddleware, handlers=handlers, debug=self.debug),
        ]
        app: ASGIApp = _route_app
        for cls, args, kwargs in reversed(middleware):
            app = cls(app, *args, **kwargs)
        return app


async def _route_app(scope: Scope, receive: Receive, send: Send) -> None:
    await scope["route"].app(scope, receive, send)
