"""Shared pieces of the public site routes: the Site dependency, per-IP limits, fixed headers."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from agent_server.foundation.errors import AgentError
from agent_server.policies.ratelimit import Usage
from agent_server.site.build import Site
from http_facade.deps import client_ip
from http_facade.errors import validation_error
from http_facade.idempotency import IdempotentRoute


def get_site(request: Request) -> Site:
    return request.app.state.site


SiteDep = Annotated[Site, Depends(get_site)]


async def count_hit(request: Request, response: Response, site: Site, policy: str, **extra: Any) -> Usage:
    """Count one hit of ``policy`` for the client IP (429 when over) and set the RateLimit headers.

    Behind a reverse proxy, run uvicorn with ``--proxy-headers --forwarded-allow-ips=<proxy>`` so
    ``request.client.host`` is the visitor's address (docs/public-api.md, "Limits").
    """
    usage = await site.limiter.enforce(getattr(site.policies, policy), client_ip(request), **extra)
    response.headers.update(usage.headers())
    return usage


def per_ip_limit(policy: str) -> Callable[..., Coroutine[Any, Any, Usage]]:
    """``count_hit`` as a dependency, for routes that count every request."""

    async def dependency(request: Request, response: Response, site: SiteDep) -> Usage:
        return await count_hit(request, response, site, policy)

    return dependency


def headers_route(headers: dict[str, str], base: type[APIRoute] = IdempotentRoute) -> type[APIRoute]:
    """A route class adding ``headers`` to every response of its routes, errors included."""

    class HeadersRoute(base):  # type: ignore[misc, valid-type]
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def with_headers(request: Request) -> Response:
                try:
                    response = await handler(request)
                except AgentError as exc:
                    exc.headers.update(headers)
                    raise
                except RequestValidationError as exc:  # as the error renderer would, plus the headers
                    error = validation_error(list(exc.errors()))
                    error.headers.update(headers)
                    raise error from None
                response.headers.update(headers)
                return response

            return with_headers

    return HeadersRoute
