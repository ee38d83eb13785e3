"""Members and invitations of the caller's organisation (docs/accounts.md, "Members and roles").

Thin routes over ``Accounts.members`` and ``Accounts.invitations`` (the dashboard's members page calls
the same). Who may call which is the route policy's (http_facade/role_policy.py); the owner rules
(only owners touch owners, the last owner stays) are the service's. Every change is audited.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, EmailStr, Field

from agent_server.accounts import invitation_store
from agent_server.accounts.members import Acting, member_view
from http_facade.gateway_deps import bearer_token
from http_facade.routes.admin_common import Actor, ActorDep, audit_note

router = APIRouter(tags=["admin: members"])
NO_STORE = {"Cache-Control": "no-store"}
Role = Literal["owner", "admin", "developer", "viewer", "billing"]
InvitableRole = Literal["admin", "developer", "viewer", "billing"]
UserId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]
InvitationId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]
CONFLICT = {409: {"description": "The last owner would go, or the state changed (a closed invitation)."}}


class RoleChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role = Field(description="owner (owners only), admin, developer, viewer or billing.")


class Transfer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=40, description="The member who becomes an owner.")


class InvitationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr = Field(description="Where the one-time link goes.")
    role: InvitableRole = Field(description="The role on joining (ownership goes to members only).")


class Acceptance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200, description="The token of the invitation's link.")
    password: str | None = Field(
        default=None, max_length=4096, description="A new account's password; omit when signed in."
    )


def acting(actor: Actor) -> Acting:
    return Acting(actor.user_id, actor.tenant_id, actor.role)


def _accounts(request: Request) -> Any:
    return request.app.state.accounts


def _now(request: Request) -> float:
    return float(request.app.state.services.clock.now())


# -- members -------------------------------------------------------------------------------------


@router.get("/admin/members", summary="The organisation's members and their roles")
async def list_members(actor: ActorDep, request: Request) -> dict[str, Any]:
    users = await _accounts(request).members.list(actor.tenant_id)
    return {"object": "list", "data": [member_view(user, acting(actor)) for user in users]}


@router.get("/admin/members/{user_id}", summary="One member")
async def get_member(user_id: UserId, actor: ActorDep, request: Request) -> dict[str, Any]:
    return member_view(await _accounts(request).members.get(actor.tenant_id, user_id), acting(actor))


@router.patch("/admin/members/{user_id}", summary="Change a member's role (owners: only by an owner)")
async def change_role(user_id: UserId, body: RoleChange, actor: ActorDep, request: Request) -> dict[str, Any]:
    audit_note(request, action="member.role_change", target=user_id, details={"role": body.role})
    user, previous = await _accounts(request).members.change_role(acting(actor), user_id, body.role)
    audit_note(request, details={"role": body.role, "previous": previous})
    return member_view(user, acting(actor))


@router.delete(
    "/admin/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove a member: they keep their account, without this organisation; their sessions end",
    responses=CONFLICT,
)
async def remove_member(user_id: UserId, actor: ActorDep, request: Request) -> Response:
    audit_note(request, action="member.remove", target=user_id)
    user = await _accounts(request).members.remove(acting(actor), user_id)
    audit_note(request, details={"email": user.email})
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/admin/membership", summary="Your own membership: organisation and role (none: no organisation)")
async def membership(actor: ActorDep, request: Request) -> dict[str, Any]:
    return await _accounts(request).members.membership(actor.user_id)


@router.delete(
    "/admin/membership",
    summary="Leave the organisation (not as its last owner); every session of yours ends",
    responses=CONFLICT,
)
async def leave(actor: ActorDep, request: Request) -> dict[str, Any]:
    audit_note(request, action="member.leave", target=actor.user_id)
    await _accounts(request).members.leave(acting(actor))
    return {"object": "membership", "left": actor.tenant_id, "sessions": "ended"}


@router.post(
    "/admin/ownership/transfer",
    summary="Hand ownership to a member: they become an owner, you an admin",
)
async def transfer_ownership(body: Transfer, actor: ActorDep, request: Request) -> dict[str, Any]:
    audit_note(request, action="member.ownership_transfer", target=body.user_id)
    successor, previous = await _accounts(request).members.transfer(acting(actor), body.user_id)
    return {
        "object": "ownership_transfer",
        "owner": member_view(successor),
        "previous": member_view(previous),
    }


# -- invitations ---------------------------------------------------------------------------------


@router.get("/admin/invitations", summary="The organisation's invitations, newest first (at most 200)")
async def list_invitations(actor: ActorDep, request: Request) -> dict[str, Any]:
    found = await _accounts(request).invitations.list(actor.tenant_id)
    now = _now(request)
    return {"object": "list", "data": [invitation_store.view(inv, now) for inv in found]}


@router.post(
    "/admin/invitations",
    status_code=status.HTTP_201_CREATED,
    summary="Invite someone by e-mail with a role (a one-time link, valid AGENTGATE_INVITE_TTL_SECONDS)",
)
async def invite(body: InvitationCreate, actor: ActorDep, request: Request) -> dict[str, Any]:
    email = str(body.email).strip().lower()
    audit_note(request, action="invitation.create", details={"email": email, "role": body.role})
    invitation = await _accounts(request).invitations.create(acting(actor), email, body.role)
    audit_note(request, target=invitation.id)
    return invitation_store.view(invitation, _now(request))


@router.post(
    "/admin/invitations/{invitation_id}/resend",
    summary="Mail a new link (the earlier one stops working) with a new expiry",
)
async def resend(invitation_id: InvitationId, actor: ActorDep, request: Request) -> dict[str, Any]:
    audit_note(request, action="invitation.resend", target=invitation_id)
    invitation = await _accounts(request).invitations.resend(acting(actor), invitation_id)
    return invitation_store.view(invitation, _now(request))


@router.delete(
    "/admin/invitations/{invitation_id}",
    summary="Revoke an invitation: its link stops working",
    responses=CONFLICT,
)
async def revoke(invitation_id: InvitationId, actor: ActorDep, request: Request) -> dict[str, Any]:
    audit_note(request, action="invitation.revoke", target=invitation_id)
    invitation = await _accounts(request).invitations.revoke(acting(actor), invitation_id)
    return invitation_store.view(invitation, _now(request))


@router.get("/admin/auth/invitation", summary="What an invitation link does (uses nothing up)")
async def describe(
    request: Request, response: Response, token: Annotated[str, Query(min_length=1, max_length=200)]
) -> dict[str, Any]:
    response.headers.update(NO_STORE)
    return await _accounts(request).invitations.describe(token)


@router.post(
    "/admin/auth/invitation",
    summary="Accept an invitation: a new account (with password), or, signed in, your account joins",
)
async def accept(body: Acceptance, request: Request, response: Response) -> dict[str, Any]:
    invitations, token = _accounts(request).invitations, bearer_token(request)
    if token:  # a person with an account (and no organisation), signed in
        claims = await request.app.state.gateway.authenticate_user(token)
        signed_in = await invitations.accept_signed_in(body.token, claims)
    else:
        signed_in = await invitations.accept_new(body.token, body.password or "")
    response.headers.update(NO_STORE)
    audit_note(request, action="invitation.accept", actor=signed_in.user_id, tenant_id=signed_in.tenant_id)
    return signed_in.body()
