"""``PageRoute``: a route class whose errors a browser sees as a page, and a program as the envelope."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from agent_server.errors import DOCS_PATH, AgentError
from http_facade.errors import validation_error
from http_facade.pages.negotiation import wants_html
from http_facade.pages.templating import render


def back_link(request: Request) -> str:
    """Where "go back" leads: the page the visitor came from on this site, else home."""
    referer = urlsplit(request.headers.get("referer", ""))
    if referer.netloc == request.url.netloc and referer.path.startswith("/"):
        return referer.path + (f"?{referer.query}" if referer.query else "")
    return "/"


def error_page(request: Request, err: AgentError) -> HTMLResponse:
    """The error as a page: what happened, what to do, its code linked to /docs/errors."""
    context = {
        "error": err,
        "status": err.http_status,
        "documentation": f"{DOCS_PATH}#{err.code}",
        "back": back_link(request),
    }
    return render(request, "error.html", context, err.http_status, headers=err.headers)


class PageRoute(APIRoute):
    """Errors of a page route: an HTML page for a browser, the site envelope for anyone else."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                if not wants_html(request):
                    raise
                return error_page(request, validation_error(list(exc.errors())))
            except AgentError as exc:
                if not wants_html(request):
                    raise
                return error_page(request, exc)

        return page_handler
