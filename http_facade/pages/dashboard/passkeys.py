"""The signed-in user's passkeys: list, rename, remove, and add one (WebAuthn in the browser).

Each form calls the function of its ``/admin/auth/passkeys`` route with the session's claims, so the
rules are the same: adding needs a sign-in of the last 10 minutes (403 ``recent_sign_in_required``)
and mails a notice; another user's passkey id is 404. ``js/dashboard/passkey-add.js`` posts the
options request and the new credential here (the session cookie is not a bearer token).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import Field

from agent_server.accounts.passkey_tables import MAX_NAME_CHARS
from agent_server.accounts.sessions import RECENT_SIGN_IN_SECONDS
from agent_server.foundation.errors import ValidationFailed
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.passkey_place import passkey_place
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.routes import account_passkeys as json_routes

router = dashboard_router()
PASSKEYS_PAGE = f"{APP_PATH}/passkeys"
PasskeyId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]


class NameForm(DashboardForm):
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)


class AddForm(NameForm):
    credential: str = Field(min_length=2, max_length=32_768, description="The credential's JSON (toJSON()).")


@router.get(PASSKEYS_PAGE, summary="Dashboard: your passkeys")
async def passkeys_page(request: Request, session: SessionDep) -> HTMLResponse:
    listed = await json_routes.list_passkeys(session.claims, request)
    age = request.app.state.gateway.clock.now() - session.claims.issued_at
    context = {"passkeys": listed.data, "recent": age <= RECENT_SIGN_IN_SECONDS, **passkey_place(request)}
    return page(request, "passkeys.html", context, session=session)


@router.post(
    f"{PASSKEYS_PAGE}/options",
    summary="Dashboard: options to create a passkey (JSON, for the page's module)",
    response_class=JSONResponse,
    responses=responses(),
)
async def creation_options(
    request: Request, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> JSONResponse:
    checked(request, form)
    options = await json_routes.creation_options(session.claims, request)
    return JSONResponse(options.model_dump(), headers={"Cache-Control": "no-store"})


@router.post(
    PASSKEYS_PAGE,
    summary="Dashboard: save the passkey just created (JSON, for the page's module)",
    response_class=JSONResponse,
    status_code=201,
    responses=responses(409),
)
async def add_passkey(
    request: Request, form: Annotated[AddForm, Form()], session: SessionDep
) -> JSONResponse:
    checked(request, form)
    try:
        credential: Any = json.loads(form.credential)
    except ValueError:
        credential = None
    if not isinstance(credential, dict):
        raise ValidationFailed(
            "The credential must be the JSON object of the new passkey.", param="credential"
        )
    body = json_routes.PasskeyCreate(credential=credential, name=form.name)
    async with audited(request, session.user_id, session.tenant_id, "passkey.add") as note:
        added = await json_routes.add_passkey(body, session.claims, request)
        note["target"] = added.id
    return JSONResponse(added.model_dump(), status_code=201)


@router.post(
    f"{PASSKEYS_PAGE}/{{passkey_id}}/rename", summary="Dashboard: rename a passkey", responses=responses(404)
)
async def rename_passkey(
    request: Request, passkey_id: PasskeyId, form: Annotated[NameForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    body = json_routes.PasskeyRename(name=form.name)
    async with audited(request, session.user_id, session.tenant_id, "passkey.rename", target=passkey_id):
        await json_routes.rename_passkey(passkey_id, body, session.claims, request)
    return see_other(PASSKEYS_PAGE)


@router.post(
    f"{PASSKEYS_PAGE}/{{passkey_id}}/delete",
    summary="Dashboard: remove a passkey; it can no longer sign in",
    responses=responses(404),
)
async def delete_passkey(
    request: Request, passkey_id: PasskeyId, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    async with audited(request, session.user_id, session.tenant_id, "passkey.delete", target=passkey_id):
        await json_routes.delete_passkey(passkey_id, session.claims, request)
    return see_other(PASSKEYS_PAGE)
