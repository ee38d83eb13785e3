"""API versioning (spec 9) at the HTTP edge: the unversioned routes and the CORS settings.

The ``API-Version`` header itself is handled by the edge middleware (``http_facade.middleware``): a
request without one gets one prebuilt header appended to its response; a pinned request is resolved
by the ``VersionRegistry`` and the chosen version is left in ``scope["state"]["api_version"]``.
"""

from __future__ import annotations

import re

# Unversioned routes (spec 4.5 and 9): the status document and its aliases.
UNVERSIONED = frozenset({"/api/status.php", "/status", "/.well-known/health"})
# Routes of a protocol that versions itself with the same header name: the Agentic Commerce Protocol
# reads API-Version as its own date (agent_server/commerce/protocol.py), so the edge leaves it alone.
SELF_VERSIONED_PREFIXES = ("/agentic_commerce/",)
EXPOSED_HEADERS = (
    "API-Version",
    "Deprecation",
    "Sunset",
    "Link",
    "Warning",
    "MCP-Version",
    "NLWeb-Version",
    "Mcp-Session-Id",
    "Retry-After",
    "RateLimit",
    "RateLimit-Policy",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Idempotency-Replayed",
    "WWW-Authenticate",
)


def cors_options(allowed_origins: list[str]) -> dict[str, object]:
    """Keyword arguments of Starlette's ``CORSMiddleware`` for the configured origins.

    ``http://host:*`` (any port) has no meaning to ``CORSMiddleware``, so such origins become a regex.
    """
    exact = [o.rstrip("/") for o in allowed_origins if not o.endswith(":*")]
    patterns = [re.escape(o[:-2]) + r"(:\d{1,5})?" for o in allowed_origins if o.endswith(":*")]
    return {
        "allow_origins": exact,
        "allow_origin_regex": "|".join(f"(?:{p})" for p in patterns) or None,
        "allow_methods": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        "allow_headers": ["*"],
        "expose_headers": list(EXPOSED_HEADERS),
        "max_age": 600,
    }
