"""Every router of the administration surface (issue 6), for ``create_app`` to include in one loop;
the connector routes follow the deployment's path segments (``admin_connectors.install_connectors``)."""

from __future__ import annotations

from http_facade.routes import (
    admin_audit,
    admin_commerce,
    admin_csp,
    admin_logs,
    admin_platform,
    admin_playground,
    admin_routing,
    admin_webhooks,
)

ADMIN_ROUTERS = (
    admin_webhooks.router,
    admin_routing.router,
    admin_playground.router,
    admin_csp.router,
    admin_audit.router,
    admin_platform.router,
    admin_commerce.router,
    admin_logs.router,
)
