"""Request metrics at the edge: one observation per HTTP request, by route template and model.

The route template comes from ``scope["route"]`` (set by the router). A request answered before
routing (413, a bad ``API-Version``) is matched against the routes afterwards, so it is still counted
under its template; a path that matches nothing is counted as ``(unmatched)`` to keep memory bounded.

The model of a request is ``scope["state"]["model"]``: a route sets it with ``request.state.model =
"<model id>"`` before it starts the response (the gateway does so for chat completions).
"""

from __future__ import annotations

from starlette.routing import Match
from starlette.types import Scope

UNMATCHED = "(unmatched)"


def route_template(scope: Scope, status: int, routes_app: object) -> str:
    """The route template of an answered request, for its metrics series."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    if template is not None:
        return template
    # A 404 from the router matched nothing; scanning every route again would only cost time.
    return UNMATCHED if status == 404 else _match(scope, routes_app)


def _match(scope: Scope, routes_app: object) -> str:
    from fastapi.routing import iter_route_contexts

    # The router's own list: a deferred group (http_facade/deferred_routes.py) builds if it matches.
    routes = getattr(getattr(routes_app, "router", None), "routes", [])
    partial = None
    for context in iter_route_contexts(routes):
        try:
            match, child_scope = context.matches(scope)
        except Exception:  # a route that cannot judge this scope does not match it
            continue
        template = context.path_format or getattr(child_scope.get("route"), "path_format", None)
        if match == Match.FULL:
            return template or UNMATCHED
        if match == Match.PARTIAL and partial is None:
            partial = template
    return partial or UNMATCHED
