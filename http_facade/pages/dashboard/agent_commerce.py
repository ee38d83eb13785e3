"""Agentic commerce for platform administrators: the agent platforms and their orders, as
``GET /admin/platform/agent-platforms`` and ``GET /admin/platform/agent-orders`` answer them
(``/app/agent-commerce``, in the platform part of the navigation; docs/agentic-commerce.md). The
forms that add and revoke platforms and move or refund orders are ``agent_commerce_forms.py``; a
refused one is drawn again by ``commerce_page`` with its message."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.route import SessionDep, actor_of, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH, Session
from http_facade.pages.form_state import FormState
from http_facade.routes.admin_commerce import list_orders, list_platforms
from http_facade.routes.admin_common import platform_actor

router = dashboard_router()
AGENT_COMMERCE_PAGE = f"{APP_PATH}/agent-commerce"
# What a form that succeeded says on the page it leads back to (``?done=``).
NOTICES = {
    "webhook": "The platform's order events go to the new address from now on.",
    "revoked": "The platform is revoked: its credential is refused from now on and no order events are sent.",
    "completed": "The order is marked fulfilled; the platform is sent its order_update event.",
    "canceled": "The order is canceled; the platform is sent its order_update event.",
    "refunded": "The order is refunded in full at the payment provider; the platform is sent its order_update event.",
}
Done = Annotated[str, Query(max_length=20, pattern=r"^[a-z]*$", description="The action just taken.")]


async def commerce_page(
    request: Request,
    session: Session,
    *,
    form: FormState | None = None,
    error: AgentError | None = None,
    error_at: str = "orders",
    notice: str = "",
) -> HTMLResponse:
    """The platforms (with the form that adds one) and the orders, each with its actions; a refused
    form keeps what was typed (``form``), a refused action shows its ``error`` above its table
    (``error_at``: platforms or orders)."""
    actor = await platform_actor(actor_of(request, session))  # 403 for anyone else
    platforms = (await list_platforms(actor, request))["data"]
    orders = (await list_orders(actor, request, limit=200))["data"]
    context = {
        "platforms": platforms,
        "orders": orders,
        "names": {platform["id"]: platform["name"] for platform in platforms},
        "platform_form": (form or FormState.blank()).at("platform"),
        "platform_error": error if error_at == "platforms" else None,
        "order_error": error if error_at == "orders" else None,
        "notice": notice,
    }
    failed = error or (form.problem if form else None)
    return page(
        request, "agent_commerce.html", context, session=session, status=failed.http_status if failed else 200
    )


@router.get(
    AGENT_COMMERCE_PAGE,
    summary="Dashboard: agent platforms and the orders they placed (platform admins)",
    responses=responses(),
)
async def agent_commerce_page(request: Request, session: SessionDep, done: Done = "") -> HTMLResponse:
    return await commerce_page(request, session, notice=NOTICES.get(done, ""))
