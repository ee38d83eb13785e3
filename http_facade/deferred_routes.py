"""Route groups built at the first request for one of their paths.

Most workers never serve the administration API or the pages for people, yet their route modules,
request models and dependencies cost every worker ~12 MB at start (docs/performance.md, "Memory").
``DeferredRoutes`` holds such a group's place in the router: it answers nothing until a request's path
starts with one of the group's prefixes, then imports and installs the group on the app (its
``install`` adds routes as ``create_app`` would), moves the new routes to its own place, so the order of
matching is the order of ``create_app``, and from then on the router sees the group's routes directly.

``app.routes`` (FastAPI's OpenAPI document, tests, anything listing every route) builds every
deferred group first (``ExactRoutesApp.routes``); the router's own list, ``app.router.routes``, is what
is built so far. Building is synchronous and happens once per group and app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.routing import BaseRoute, Match, NoMatchFound, get_route_path
from starlette.types import Receive, Scope, Send

# Adds the group's routes to the app it is given (include_router, add_api_route, mount, ...).
Install = Callable[[Any], None]


class DeferredRoutes(BaseRoute):
    def __init__(self, app: Any, name: str, prefixes: tuple[str, ...], install: Install) -> None:
        self.app, self.name, self.prefixes = app, name, prefixes
        self._install: Install | None = install
        self._routes: list[BaseRoute] = []

    @property
    def built(self) -> bool:
        return self._install is None

    def build(self) -> list[BaseRoute]:
        """Install the group on the app and put its routes where this placeholder stands."""
        install, self._install = self._install, None
        if install is None:
            return self._routes
        routes = self.app.router.routes
        end = len(routes)
        try:
            install(self.app)
        except BaseException:
            del routes[end:]  # nothing half-installed; the next request tries again
            self._install = install
            raise
        self._routes = routes[end:]
        del routes[end:]
        # The router may be iterating this list right now (a request matching this placeholder): the
        # routes that take its place are the ones it matched against, so the iteration stays right.
        place = _index(routes, self)
        routes[place : place + 1] = self._routes
        return self._routes

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] not in ("http", "websocket") or not get_route_path(scope).startswith(self.prefixes):
            return Match.NONE, {}
        found: tuple[Match, Scope] = (Match.NONE, {})
        for route in self.build():
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                return match, {**child_scope, "route": route}
            if match is Match.PARTIAL and found[0] is Match.NONE:
                found = (match, {**child_scope, "route": route})
        return found

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The router set scope["route"] to the group's route that matched (the child scope of matches).
        await scope["route"].handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        for route in self.build():
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                pass
        raise NoMatchFound(name, path_params)

    def __repr__(self) -> str:
        return f"DeferredRoutes({self.name!r}, prefixes={self.prefixes!r}, built={self.built})"


def build_all(app: Any) -> None:
    """Build every deferred group of the app (in its order), e.g. before listing every route."""
    for route in list(app.router.routes):
        if isinstance(route, DeferredRoutes):
            route.build()


def routes_serving(app: Any, scope: Scope) -> list[BaseRoute]:
    """The app's routes in order, with the deferred groups whose prefixes cover the request's path
    built and in place; a group that cannot hold a route for this path stays unbuilt."""
    path, routes = get_route_path(scope), []
    for route in list(app.router.routes):
        if not isinstance(route, DeferredRoutes):
            routes.append(route)
        elif path.startswith(route.prefixes):
            routes.extend(route.build())
    return routes


def _index(routes: list[BaseRoute], route: BaseRoute) -> int:
    return next(i for i, candidate in enumerate(routes) if candidate is route)
