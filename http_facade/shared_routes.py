"""Routes built once per process and shared by every app that includes them.

FastAPI builds a second copy of every included route for each app (its dependants, parameter
models and handler: about a millisecond a route, and their memory), although the module-level
routers hold a finished copy already. ``include_shared`` adds the routers' own routes instead: a
plain include adds them as they are; an include under a prefix (the billing segment) builds that
inclusion once per router and prefix. The router's lifespan joins the app's, as FastAPI's include
does. The OpenAPI document is the same (tests/http_facade/test_openapi_snapshot.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute

# (router, prefix) -> a router holding that inclusion; the router is kept so its id is never reused
_PREFIXED: dict[tuple[int, str], tuple[APIRouter, APIRouter]] = {}


def can_share(router: APIRouter, options: Mapping[str, object]) -> bool:
    """An include with no option but a prefix, of a router without start or stop handlers."""
    return not options and not router.on_startup and not router.on_shutdown


def include_shared(app: FastAPI, router: APIRouter, prefix: str = "") -> None:
    """What ``app.include_router(router, prefix=prefix)`` does, with the routes built once."""
    app.router.routes.extend(_shared_routes(router, prefix))
    app.router.lifespan_context = _joined(app.router.lifespan_context, router.lifespan_context)


def _shared_routes(router: APIRouter, prefix: str) -> list[BaseRoute]:
    if not prefix:
        return list(router.routes)
    key = (id(router), prefix)
    if key not in _PREFIXED:
        holder = APIRouter()
        holder.include_router(router, prefix=prefix)
        _PREFIXED[key] = (router, holder)
    return list(_PREFIXED[key][1].routes)


def _joined(outer: Any, inner: Any) -> Any:
    """Both lifespans, the app's around the router's; on a clash the app's state wins, as in FastAPI."""

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Mapping[str, Any] | None]:
        async with outer(app) as outer_state, inner(app) as inner_state:
            if outer_state is None and inner_state is None:
                yield None
            else:
                yield {**(inner_state or {}), **(outer_state or {})}

    return lifespan
