"""API keys: list, create (the key shown once, with first-request snippets), revoke and rotate (each
after a confirmation page), as ``/admin/api-keys`` and ``/admin/keys/rotate`` do it (``KeyAdmin``).
The key page (``/app/keys/{id}``: settings, spend, requests) is ``key_page.py``; the settings form
``key_forms.py``.

The page that shows a new key is the answer to the POST itself, ``Cache-Control: no-store``; the
key is never stored and no later page can show it again (lists show its prefix and last four).
A form the service refuses is shown again with the message next to its field and the input kept.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.foundation.errors import AgentError
from agent_server.gateway.key_admin import MAX_OVERLAP, is_live
from agent_server.gateway.key_settings import DEFAULT_SCOPES
from agent_server.gateway.repository import find_key, list_keys
from agent_server.gateway.tables import ApiKey
from agent_server.llm.grants import ModelGrant
from http_facade.pages.dashboard import key_forms, key_page
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.key_forms import KeyForm
from http_facade.pages.dashboard.key_views import KEYS_PAGE, KeyId, form_context, shown
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import Session
from http_facade.pages.dashboard.snippets import first_request
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.role_policy import allows
from http_facade.routes.admin_keys import view

router = dashboard_router()
router.include_router(key_page.router)
OVERLAPS = (
    (0, "None: the old key stops at once"),
    (3600, "1 hour"),
    (86_400, "24 hours"),
    (604_800, "7 days"),
)


class RotateForm(DashboardForm):
    overlap: int = Field(default=0, ge=0, le=MAX_OVERLAP)


async def _keys_page(
    request: Request,
    session: Session,
    *,
    values: dict[str, Any] | None = None,
    error: AgentError | None = None,
    notice: str = "",
) -> HTMLResponse:
    _, plan = await tenant_of(request, session)
    gateway = request.app.state.gateway
    await gateway.usage.flush()  # the usage this process still holds moves "last used" on
    records = await list_keys(gateway.db, session.tenant_id)
    now = gateway.clock.now()
    keys = [shown(record, now) for record in reversed(records)]
    context = {
        "keys": keys,
        "live": sum(1 for record in records if is_live(record, now)),
        "plan": plan,
        "notice": notice,
        # A role that may only read (viewer) sees the form disabled and no row actions.
        "can_manage": allows(session.claims, "POST", KEYS_PAGE),
        "role": session.role,
        **form_context(request, plan, values or key_forms.new_values(list(DEFAULT_SCOPES)), error),
    }
    return page(request, "keys.html", context, session=session, status=error.http_status if error else 200)


async def created_page(
    request: Request, session: Session, record: ApiKey, full: str, **more: Any
) -> HTMLResponse:
    """The new key, once, with the first request's snippets filled in with it."""
    _, plan = await tenant_of(request, session)
    allowed = ModelGrant(record.models) if record.models else None
    context = {
        "key": view(record),
        "secret": full,
        "first_request": await first_request(
            request, plan, key=full, allowed=allowed, environment=record.environment
        ),
        "rotated_from": None,
        **more,
    }
    return page(request, "key_created.html", context, session=session)


@router.get(KEYS_PAGE, summary="Dashboard: the organisation's API keys")
async def keys_page(request: Request, session: SessionDep, revoked: str = "") -> HTMLResponse:
    notice = ""
    if revoked:
        try:
            record = await find_key(request.app.state.gateway.db, session.tenant_id, revoked[:40])
            notice = f"The key “{record.name}” is revoked; requests with it now fail."
        except AgentError:
            notice = ""  # a stale or foreign id: nothing to say
    return await _keys_page(request, session, notice=notice)


@router.post(
    KEYS_PAGE,
    summary="Dashboard: create an API key (shown once, on this answer only)",
    responses=responses(403),
)
async def create_key(request: Request, form: Annotated[KeyForm, Form()], session: SessionDep) -> HTMLResponse:
    checked(request, form)
    gateway = request.app.state.gateway
    details = {"scopes": form.scopes}
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "api_key.create", details=details
        ) as note:
            options = key_forms.read(form, gateway.models.currency, gateway.clock.now())
            record, full = await gateway.key_admin.issue(session.tenant_id, form.name, form.scopes, options)
            note["target"] = record.id
    except AgentError as err:
        return await _keys_page(request, session, values=key_forms.submitted(form), error=err)
    return await created_page(request, session, record, full)


@router.get(
    f"{KEYS_PAGE}/{{key_id}}/revoke",
    summary="Dashboard: confirm revoking an API key",
    responses=responses(404),
)
async def revoke_page(request: Request, key_id: KeyId, session: SessionDep) -> HTMLResponse:
    gateway = request.app.state.gateway
    record = await find_key(gateway.db, session.tenant_id, key_id)
    return page(request, "key_revoke.html", {"key": shown(record, gateway.clock.now())}, session=session)


@router.post(
    f"{KEYS_PAGE}/{{key_id}}/revoke",
    summary="Dashboard: revoke an API key at once and for good",
    responses=responses(404),
)
async def revoke_key(
    request: Request, key_id: KeyId, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    async with audited(request, session.user_id, session.tenant_id, "api_key.revoke", target=key_id):
        await request.app.state.gateway.revoke_key(session.tenant_id, key_id)
    return see_other(f"{KEYS_PAGE}?revoked={key_id}")


async def _rotate_page(
    request: Request, session: Session, key_id: str, *, overlap: int = 0, error: AgentError | None = None
) -> HTMLResponse:
    gateway = request.app.state.gateway
    record = await find_key(gateway.db, session.tenant_id, key_id)
    context = {
        "key": shown(record, gateway.clock.now()),
        "overlaps": OVERLAPS,
        "overlap": overlap,
        "error": error,
    }
    return page(
        request, "key_rotate.html", context, session=session, status=error.http_status if error else 200
    )


@router.get(
    f"{KEYS_PAGE}/{{key_id}}/rotate",
    summary="Dashboard: confirm rotating an API key and choose how long the old one keeps working",
    responses=responses(404),
)
async def rotate_page(request: Request, key_id: KeyId, session: SessionDep) -> HTMLResponse:
    return await _rotate_page(request, session, key_id)


@router.post(
    f"{KEYS_PAGE}/{{key_id}}/rotate",
    summary="Dashboard: replace an API key; the old one stops at once or after the overlap, the new one is shown once",
    responses=responses(404),
)
async def rotate_key(
    request: Request, key_id: KeyId, form: Annotated[RotateForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    gateway = request.app.state.gateway
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "api_key.rotate", target=key_id
        ) as note:
            old, new, full = await gateway.key_admin.rotate(session.tenant_id, key_id, form.overlap)
            note["details"].update(scopes=list(new.scopes), overlap_seconds=form.overlap)
    except AgentError as err:
        if err.http_status == 404:
            raise
        return await _rotate_page(request, session, key_id, overlap=form.overlap, error=err)
    return await created_page(
        request, session, new, full, rotated_from=shown(old, gateway.clock.now()), overlap=form.overlap
    )
