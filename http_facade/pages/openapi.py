"""How page routes appear in ``/openapi.json``: HTML for a browser, the site envelope for a program."""

from __future__ import annotations

from typing import Any

from agent_server.policies.retry_guidance import RATE_LIMITED

SITE_ERROR = {"$ref": "#/components/schemas/SiteError"}
HTML_TEXT = {"schema": {"type": "string"}}
ERROR_TEXT = {
    400: "Invalid form field; a page for a browser, the envelope for a program.",
    403: "A form sent from another site (the Origin or Sec-Fetch-Site of another site).",
    404: "No such resource.",
    429: f"Too many requests from this address. {RATE_LIMITED}",
    503: "A dependency is unavailable; retry shortly.",
}


def page_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Error responses of a page route, documented in both renderings."""
    return {
        status: {
            "description": ERROR_TEXT[status],
            "content": {"application/json": {"schema": SITE_ERROR}, "text/html": HTML_TEXT},
        }
        for status in (400, *statuses)
    }


def negotiated_ok(description: str) -> dict[int | str, dict[str, Any]]:
    """A 200 that is HTML for a browser and JSON for everyone else."""
    content = {"application/json": {"schema": {"type": "object"}}, "text/html": HTML_TEXT}
    return {200: {"description": description, "content": content}}
