"""Every page router, and ``install_pages``: what ``create_app`` adds for people."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from http_facade.pages import catalogue, discovery_call, docs, forms, site
from http_facade.pages.dashboard import DASHBOARD_ROUTER
from http_facade.pages.static import static_files
from http_facade.pages.templating import STATIC_PATH

PAGE_ROUTERS: tuple[APIRouter, ...] = (
    site.router,
    catalogue.router,
    discovery_call.router,
    forms.router,
    docs.router,
)


def install_pages(app: FastAPI) -> None:
    """The page routes and ``/static``. ``/`` itself stays in routes/site_catalogue.py, which renders
    the home page when a browser asks (content negotiation) and JSON otherwise."""
    for router in PAGE_ROUTERS:
        app.include_router(router)
    app.include_router(DASHBOARD_ROUTER)  # /app: signed-in pages redirect, so not in PAGE_ROUTERS
    app.mount(STATIC_PATH, static_files(), name="static")
