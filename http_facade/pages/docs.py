"""Documentation pages: ``/docs`` (the API explorer, offline) and ``/docs/errors`` (every code).

FastAPI's own ``/docs`` is off (``docs_url=None``): its page loads Swagger UI from a CDN and starts
it with an inline script, which the pages' Content-Security-Policy forbids. This page loads the
vendored swagger-ui-dist from ``/static`` and starts it from a static module.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from agent_server.foundation.errors import DOCS_PATH
from http_facade.deps import SettingsDep
from http_facade.errors import JSON_UTF8
from http_facade.pages.error_catalogue import catalogue_document, error_groups, error_types
from http_facade.pages.negotiation import VARY_ACCEPT, wants_html
from http_facade.pages.openapi import negotiated_ok
from http_facade.pages.route import PageRoute
from http_facade.pages.templating import render

router = APIRouter(tags=["pages"], route_class=PageRoute, default_response_class=HTMLResponse)
SWAGGER_UI = "vendor/swagger-ui-5.35.0"  # under /static; the version is part of the path


@router.get("/docs", summary="Interactive API reference (Swagger UI, served by the app)")
async def api_docs(request: Request) -> HTMLResponse:
    return render(
        request, "docs_api.html", {"swagger_ui": SWAGGER_UI, "openapi_url": request.app.openapi_url}
    )


@router.get(
    DOCS_PATH,
    summary="Every error type and code with its meaning and remedy (HTML for browsers, else JSON)",
    response_model=None,
    responses=negotiated_ok("The error catalogue."),
)
async def error_docs(request: Request, settings: SettingsDep) -> Response:
    base = settings.public_base_url.rstrip("/")
    if wants_html(request):
        context = {"types": error_types(), "groups": error_groups()}
        return render(request, "docs_errors.html", context, headers=VARY_ACCEPT)
    headers = {**VARY_ACCEPT, "Cache-Control": "public, max-age=300"}
    return JSONResponse(catalogue_document(base), media_type=JSON_UTF8, headers=headers)
