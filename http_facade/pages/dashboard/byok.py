"""Provider keys (bring your own key): the organisation's own key per LLM provider, shown only as its
last four characters; add or replace one, delete one after a confirmation. The pages call the
functions of ``/admin/byok`` (the plan's ``byok`` feature, the known providers, the key cache
cleared); on a plan without the feature the forms are shown disabled with the plan that has it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Path, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.json_body import json_body
from http_facade.pages.dashboard.plan_gate import plan_gate
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    actor_of,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, Session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.routes import admin_byok as json_routes

router = dashboard_router()
BYOK_PAGE = f"{APP_PATH}/provider-keys"
Provider = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")]
Done = Annotated[str, Query(max_length=20, pattern=r"^(saved|deleted)?$")]
NOTICES = {
    "saved": "The {provider} key is saved; models called with your own {provider} key use it now.",
    "deleted": "The {provider} key is deleted; models that need it answer 402 until you add one again.",
}


class KeyForm(DashboardForm):
    api_key: str = Field(default="", max_length=1000)


async def byok_page(
    request: Request, session: Session, *, error: AgentError | None = None, notice: str = "", failed: str = ""
) -> HTMLResponse:
    gateway = request.app.state.gateway
    actor = actor_of(request, session)
    listed = await json_routes.list_provider_keys(actor, gateway)
    stored = {key["provider"]: key for key in listed["data"]}
    models = gateway.models.byok  # model id -> the provider whose key it is called with
    providers = [
        {"name": name, "key": stored.get(name), "models": sorted(m for m, p in models.items() if p == name)}
        for name in listed["providers"]
    ]
    _, plan = await tenant_of(request, session)
    context = {
        "providers": providers,
        "error": error,
        "failed": failed,  # the provider whose form was refused: the message goes next to it
        "notice": notice,
        "gate": plan_gate(request, plan, "byok"),
    }
    return page(request, "byok.html", context, session=session, status=error.http_status if error else 200)


@router.get(BYOK_PAGE, summary="Dashboard: the organisation's own provider keys (bring your own key)")
async def provider_keys(
    request: Request,
    session: SessionDep,
    done: Done = "",
    provider: Annotated[str, Query(max_length=100, pattern=r"^[A-Za-z0-9_.-]*$")] = "",
) -> HTMLResponse:
    notice = NOTICES[done].format(provider=provider) if done and provider else ""
    return await byok_page(request, session, notice=notice)


@router.post(
    f"{BYOK_PAGE}/{{provider}}",
    summary="Dashboard: store or replace the organisation's key for a provider (shown as a hint only)",
    responses=responses(404),
)
async def put_key(
    request: Request, provider: Provider, form: Annotated[KeyForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    gateway, actor = request.app.state.gateway, actor_of(request, session)
    json_routes.known_provider(actor, request, provider)
    try:
        async with audited(request, session.user_id, session.tenant_id, "byok.put", target=provider):
            body = json_body(json_routes.ProviderKeyBody, api_key=form.api_key.strip())
            await json_routes.put_provider_key(provider, body, actor, gateway, request)
    except AgentError as err:
        return await byok_page(request, session, error=err, failed=provider)
    return see_other(f"{BYOK_PAGE}?done=saved&provider={provider}")


@router.get(
    f"{BYOK_PAGE}/{{provider}}/delete",
    summary="Dashboard: confirm deleting the organisation's key for a provider",
    responses=responses(404),
)
async def delete_page(request: Request, provider: Provider, session: SessionDep) -> HTMLResponse:
    gateway, actor = request.app.state.gateway, actor_of(request, session)
    json_routes.known_provider(actor, request, provider)
    key = await json_routes.get_provider_key(provider, actor, gateway)
    models = sorted(m for m, p in gateway.models.byok.items() if p == provider)
    return page(request, "byok_delete.html", {"key": key, "models": models}, session=session)


@router.post(
    f"{BYOK_PAGE}/{{provider}}/delete",
    summary="Dashboard: delete the organisation's key for a provider",
    responses=responses(404),
)
async def delete_key(
    request: Request, provider: Provider, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    gateway, actor = request.app.state.gateway, actor_of(request, session)
    json_routes.known_provider(actor, request, provider)
    async with audited(request, session.user_id, session.tenant_id, "byok.delete", target=provider):
        await json_routes.delete_provider_key(provider, actor, gateway, request)
    return see_other(f"{BYOK_PAGE}?done=deleted&provider={provider}")
