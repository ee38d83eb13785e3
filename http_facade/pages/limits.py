"""The per-IP limits of the public site, counted for pages exactly as for their JSON twins."""

from __future__ import annotations

from starlette.requests import Request

from agent_server.policies.ratelimit import Usage
from agent_server.site.build import Site
from http_facade.deps import client_ip


async def count_page_hit(request: Request, site: Site, policy: str) -> Usage:
    """One hit of ``policy`` (``forms`` for checkout and sign-up, ``ask`` for questions); 429 when over."""
    return await site.limiter.enforce(getattr(site.policies, policy), client_ip(request))
