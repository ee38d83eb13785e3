"""The route groups ``create_app`` defers to their first request (http_facade/deferred_routes.py):
the administration API (with accounts, registration and single sign-on) and the pages for people.

Each group's prefixes cover every path it adds (tests/http_facade/test_deferred_routes.py checks it);
its modules are imported only when it is built.
"""

from __future__ import annotations

from typing import Any

from agent_server.foundation.settings import Settings

ADMINISTRATION_PREFIXES = ("/admin/", "/register", "/sso/")
PAGE_PREFIXES = (
    "/app",
    "/ask",
    "/catalogue",
    "/checkout",
    "/docs",
    "/faq",
    "/newsletter",
    "/pricing",
    "/privacy",
    "/static/",
    "/status-page",
    "/terms",
)


def install_administration(app: Any, settings: Settings) -> None:
    """/admin (keys, webhooks, routing, members, SSO, ...), /register and /sso, in this order."""
    from http_facade.routes import admin_keys
    from http_facade.routes.account_routers import ACCOUNT_ROUTERS
    from http_facade.routes.admin_connectors import install_connectors
    from http_facade.routes.admin_routers import ADMIN_ROUTERS

    app.include_router(admin_keys.router)
    for admin_router in ADMIN_ROUTERS:
        app.include_router(admin_router)
    install_connectors(app, settings)  # /admin/<office_suite>/..., /admin/<search_provider>/...
    for account_router in ACCOUNT_ROUTERS:
        app.include_router(account_router)


def renames_connectors(settings: Settings) -> bool:
    """Whether the deployment names the connector path segments itself: then the administration group
    is built at start, where ``install_connectors`` refuses a segment another /admin route uses."""
    defaults = Settings.model_fields
    return any(
        getattr(settings, name) != defaults[name].default
        for name in ("office_suite_path_segment", "search_provider_path_segment")
    )


def install_pages(app: Any) -> None:
    """The pages for people, /docs, /docs/errors and /static (docs/pages.md)."""
    from http_facade.pages.routers import install_pages as install

    install(app)
