"""``/app/members``: the organisation's members and invitations, as ``/admin/members`` and
``/admin/invitations`` do it (``Accounts.members``, ``Accounts.invitations``; the same rules).

Everyone the policy lets read the page sees both lists; the forms appear for the roles that may
send them (invite, resend, revoke, change a role, remove: owners and admins; hand ownership over:
owners). Leaving is on the account page. Each form answers with a redirect to this page and a notice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import EmailStr, Field

from agent_server.accounts import invitation_store
from agent_server.accounts.members import Acting, member_view
from agent_server.accounts.roles import INVITABLE, ROLE_TEXT, ROLES
from agent_server.foundation.errors import AgentError
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
from http_facade.pages.dashboard.session import APP_PATH, LOGIN_PATH, Session, end_session
from http_facade.role_policy import allows

router = dashboard_router()
MEMBERS_PAGE = f"{APP_PATH}/members"
Id = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]
NOTICES = {
    "invited": "The invitation is on its way.",
    "resent": "A new link is on its way; the earlier one no longer works.",
    "revoked": "The invitation is withdrawn; its link no longer works.",
    "role": "The role is changed; it applies from the member's next click.",
    "removed": "The member is removed; their sessions have ended.",
    "transferred": "Ownership is handed over; you are an admin now.",
}


class InviteForm(DashboardForm):
    email: EmailStr
    role: str = Field(max_length=16)


class RoleForm(DashboardForm):
    role: str = Field(max_length=16)


def _acting(session: Session) -> Acting:
    return Acting(session.user_id, session.tenant_id, session.role)


async def _members_page(
    request: Request, session: Session, *, error: AgentError | None = None, notice: str = ""
) -> HTMLResponse:
    accounts, now = request.app.state.accounts, request.app.state.services.clock.now()
    users = await accounts.members.list(session.tenant_id)
    invitations = [invitation_store.view(i, now) for i in await accounts.invitations.list(session.tenant_id)]
    may = {action: allows(session.claims, "POST", f"{MEMBERS_PAGE}{path}") for action, path in (
        ("invite", "/invitations"), ("manage", "/{user_id}/role"), ("transfer", "/{user_id}/transfer"))}  # fmt: skip
    context = {
        "members": [member_view(user, _acting(session)) for user in users],
        "invitations": [i for i in invitations if i["state"] in ("pending", "expired")],
        "roles": ROLES,
        "invitable": INVITABLE,
        "role_text": ROLE_TEXT,
        "may": may,
        "error": error,
        "notice": NOTICES.get(notice, ""),
    }
    return page(request, "members.html", context, session=session, status=error.http_status if error else 200)


@router.get(MEMBERS_PAGE, summary="Dashboard: members, their roles and pending invitations")
async def members_page(request: Request, session: SessionDep, done: str = "") -> HTMLResponse:
    return await _members_page(request, session, notice=done[:20])


Change = Callable[[], Awaitable[Mapping[str, str | None] | None]]


async def _act(
    request: Request, session: Session, action: str, target: str | None, change: Change, done: str
) -> Response:
    """Run ``change`` audited as ``action``; the page again with the error, or a redirect with a notice."""
    try:
        async with audited(request, session.user_id, session.tenant_id, action, target=target) as note:
            details = await change()
            note["details"].update(details or {})
    except AgentError as err:
        return await _members_page(request, session, error=err)
    return see_other(f"{MEMBERS_PAGE}?done={done}")


@router.post(
    f"{MEMBERS_PAGE}/invitations",
    summary="Dashboard: invite someone by e-mail",
    responses=responses(409, 429),
)
async def invite(request: Request, form: Annotated[InviteForm, Form()], session: SessionDep) -> Response:
    checked(request, form)

    async def change() -> dict[str, str]:
        made = await request.app.state.accounts.invitations.create(
            _acting(session), str(form.email), form.role
        )
        return {"email": made.email, "role": made.role}

    return await _act(request, session, "invitation.create", None, change, "invited")


@router.post(
    f"{MEMBERS_PAGE}/invitations/{{invitation_id}}/resend",
    summary="Dashboard: send an invitation again (a new link)",
    responses=responses(404, 409, 429),
)
async def resend(
    request: Request, invitation_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)

    async def change() -> None:
        await request.app.state.accounts.invitations.resend(_acting(session), invitation_id)

    return await _act(request, session, "invitation.resend", invitation_id, change, "resent")


@router.post(
    f"{MEMBERS_PAGE}/invitations/{{invitation_id}}/revoke",
    summary="Dashboard: withdraw an invitation",
    responses=responses(404, 409),
)
async def revoke(
    request: Request, invitation_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)

    async def change() -> None:
        await request.app.state.accounts.invitations.revoke(_acting(session), invitation_id)

    return await _act(request, session, "invitation.revoke", invitation_id, change, "revoked")


@router.post(
    f"{MEMBERS_PAGE}/{{user_id}}/role",
    summary="Dashboard: change a member's role",
    responses=responses(404, 409),
)
async def change_role(
    request: Request, user_id: Id, form: Annotated[RoleForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)

    async def change() -> dict[str, str | None]:
        _, previous = await request.app.state.accounts.members.change_role(
            _acting(session), user_id, form.role
        )
        return {"role": form.role, "previous": previous}

    return await _act(request, session, "member.role_change", user_id, change, "role")


@router.post(
    f"{MEMBERS_PAGE}/{{user_id}}/remove",
    summary="Dashboard: remove a member (their sessions end)",
    responses=responses(404, 409),
)
async def remove(
    request: Request, user_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)

    async def change() -> dict[str, str]:
        return {"email": (await request.app.state.accounts.members.remove(_acting(session), user_id)).email}

    response = await _act(request, session, "member.remove", user_id, change, "removed")
    if user_id == session.user_id and response.status_code == 303:  # removed oneself: that session ended
        response = see_other(f"{LOGIN_PATH}?signed_out=1")
        end_session(response, request.app.state.services.settings)
    return response


@router.post(
    f"{MEMBERS_PAGE}/{{user_id}}/transfer",
    summary="Dashboard: hand ownership to a member (you become an admin)",
    responses=responses(404, 409),
)
async def transfer(
    request: Request, user_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)

    async def change() -> None:
        await request.app.state.accounts.members.transfer(_acting(session), user_id)

    return await _act(request, session, "member.ownership_transfer", user_id, change, "transferred")
