"""API keys: list, create (the key shown once), revoke and rotate, as ``/admin/api-keys`` and
``/admin/keys/rotate`` do it (``Gateway.issue_key``, ``revoke_key``, ``rotate_key``).

The page that shows a new key is the answer to the POST itself, ``Cache-Control: no-store``; the
key is never stored and no later page can show it again (lists show its prefix and last four).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.gateway.repository import find_key, list_keys
from agent_server.gateway.tables import ApiKey
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, Session, current_session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.pages.form_state import FormState, redisplays
from http_facade.routes.admin_keys import view

router = dashboard_router()
KEYS_PAGE = f"{APP_PATH}/keys"
KeyId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]


class KeyForm(DashboardForm):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] = Field(default_factory=list, max_length=5)


def _status(record: ApiKey) -> str:
    if record.revoked_at is None:
        return "active"
    return "replaced" if record.replaced_by else "revoked"


async def _keys_page(
    request: Request, session: Session, *, form: FormState | None = None, notice: str = ""
) -> HTMLResponse:
    _, plan = await tenant_of(request, session)
    gateway = request.app.state.gateway
    await gateway.usage.flush()  # the usage this process still holds moves "last used" on
    records = await list_keys(gateway.db, session.tenant_id)
    keys = [{**view(record), "status": _status(record)} for record in reversed(records)]
    form = (form or FormState.blank(scopes=["chat"])).at("key")
    context = {"keys": keys, "scopes": sorted(plan.scopes), "form": form, "notice": notice}
    return page(request, "keys.html", context, session=session, status=form.status)


async def _keys_again(request: Request, form: FormState) -> HTMLResponse:
    return await _keys_page(request, await current_session(request), form=form)


@router.get(KEYS_PAGE, summary="Dashboard: the organisation's API keys")
async def keys_page(request: Request, session: SessionDep, revoked: str = "") -> HTMLResponse:
    notice = f"The key {revoked} is revoked; requests with it now fail." if revoked else ""
    return await _keys_page(request, session, notice=notice[:200])


@router.post(
    KEYS_PAGE,
    summary="Dashboard: create an API key (shown once, on this answer only)",
    responses=responses(403),
)
@redisplays(_keys_again)
async def create_key(request: Request, form: Annotated[KeyForm, Form()], session: SessionDep) -> HTMLResponse:
    checked(request, form)
    gateway = request.app.state.gateway
    details = {"scopes": form.scopes}
    async with audited(
        request, session.user_id, session.tenant_id, "api_key.create", details=details
    ) as note:
        record, full = await gateway.issue_key(session.tenant_id, form.name, form.scopes)
        note["target"] = record.id
    context = {"key": view(record), "secret": full, "rotated_from": None}
    return page(request, "key_created.html", context, session=session)


@router.get(
    f"{KEYS_PAGE}/{{key_id}}/revoke",
    summary="Dashboard: confirm revoking an API key",
    responses=responses(404),
)
async def revoke_page(request: Request, key_id: KeyId, session: SessionDep) -> HTMLResponse:
    record = await find_key(request.app.state.gateway.db, session.tenant_id, key_id)
    return page(
        request, "key_revoke.html", {"key": {**view(record), "status": _status(record)}}, session=session
    )


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


@router.post(
    f"{KEYS_PAGE}/{{key_id}}/rotate",
    summary="Dashboard: replace an API key; the old one stops at once, the new one is shown once",
    responses=responses(404),
)
async def rotate_key(
    request: Request, key_id: KeyId, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    gateway = request.app.state.gateway
    async with audited(request, session.user_id, session.tenant_id, "api_key.rotate", target=key_id) as note:
        old, new, full = await gateway.rotate_key(session.tenant_id, key_id)
        note["details"]["scopes"] = list(new.scopes)
    context = {"key": view(new), "secret": full, "rotated_from": old.id}
    return page(request, "key_created.html", context, session=session)
