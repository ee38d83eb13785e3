"""Errors as pages: what a browser sees when something fails, on any URL meant for people.

``error_page`` renders an ``AgentError`` with the site's header, what happened in plain words, what to
do and a way back. ``wants_error_page`` decides, for the app-wide error handlers, whether a request is
a browser's on a URL for people: never under ``/api/`` (the contract's JSON 404 there is for every
client) or the gateway's prefixes (``/v1``, ``/admin``, ``/agent``: the gateway envelope), and only
when the Accept header prefers HTML (docs/pages.md, "Negotiation").
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from agent_server.foundation.errors import DOCS_PATH, AgentError
from agent_server.foundation.urls import split_url
from http_facade.pages.negotiation import wants_html
from http_facade.pages.templating import render

JSON_ONLY_PREFIXES = ("/api/", "/.well-known/")
# A heading per status a person may meet; anything else falls back by its class (4xx, 5xx).
HEADINGS = {
    400: "This request could not be used",
    401: "Please sign in",
    403: "You may not do this here",
    404: "Page not found",
    405: "This address does not take that request",
    409: "This conflicts with something that changed",
    413: "This is too large",
    429: "Too many requests",
    503: "Not available right now",
}
ADVICE = {
    401: "Sign in again, then retry.",
    403: "If you followed a form from an older tab, reload the page and send the form again.",
    404: "The address may be mistyped, or the page moved. Start again from the home page or the dashboard.",
    405: "Pages answer links and their own forms; open the page that holds the form and send it from there.",
}


def back_link(request: Request) -> str:
    """Where "go back" leads: the page the visitor came from on this site, else home. Not the failed
    address itself (a form's answer posted again from its own page: a link cannot post)."""
    referer = split_url(request.headers.get("referer", ""))
    if (
        referer is not None
        and referer.netloc == request.url.netloc
        and referer.path.startswith("/")
        and referer.path != request.url.path
    ):
        return referer.path + (f"?{referer.query}" if referer.query else "")
    return "/"


def heading(status: int) -> str:
    if status in HEADINGS:
        return HEADINGS[status]
    return "Something went wrong on our side" if status >= 500 else "This did not work"


def error_page(request: Request, err: AgentError) -> HTMLResponse:
    """The error as a page: what happened, what to do, its code linked to /docs/errors, ways back."""
    status = err.http_status
    context = {
        "error": err,
        "status": status,
        "heading": heading(status),
        "advice": ADVICE.get(
            status, "Please try again in a moment." if status >= 500 and err.retry_after is None else ""
        ),
        "documentation": f"{DOCS_PATH}#{err.code}",
        "back": back_link(request),
        "in_app": request.url.path.startswith("/app"),
    }
    return render(request, "error.html", context, status, headers=err.headers)


def wants_error_page(request: Request, gateway_path: bool) -> bool:
    """True for a browser's request on a URL for people (``gateway_path``: the gateway envelope's)."""
    path = request.url.path
    if gateway_path or path.startswith(JSON_ONLY_PREFIXES) or path == "/api":
        return False
    return wants_html(request)
