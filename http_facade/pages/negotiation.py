"""Content negotiation: one URL, HTML for a browser and JSON for a program (docs/pages.md)."""

from __future__ import annotations

from starlette.requests import Request

HTML = "text/html"
JSON = "application/json"
# On every answer of a negotiated URL: a cache must not hand a browser's page to a program.
VARY_ACCEPT = {"Vary": "Accept"}


def _ranges(accept: str) -> list[tuple[str, float]]:
    """The media ranges of an Accept header with their weights (RFC 9110 12.5.1)."""
    ranges = []
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        if not media:
            continue
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    weight = 0.0
        ranges.append((media.lower(), weight))
    return ranges


def quality(accept: str, media_type: str) -> float:
    """The weight ``accept`` gives ``media_type``: from its most specific matching range, else 0."""
    kind = media_type.split("/", 1)[0] + "/*"
    best: tuple[int, float] = (-1, 0.0)
    for media, weight in _ranges(accept):
        specificity = 2 if media == media_type else 1 if media == kind else 0 if media == "*/*" else -1
        if specificity > best[0]:
            best = (specificity, weight)
    return best[1]


def wants_html(request: Request) -> bool:
    """True when the client prefers HTML to JSON (a browser) and did not ask for ``?mode=agent``.

    ``*/*`` alone (curl, HTTP libraries) weighs both the same, and a tie goes to JSON: programs keep
    the answer they always had. Browsers name text/html and give ``*/*`` a lower weight.
    """
    if request.query_params.get("mode") == "agent":
        return False
    accept = request.headers.get("accept", "")
    return quality(accept, HTML) > quality(accept, JSON)
