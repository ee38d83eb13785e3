"""Sign-out and passwords of existing users (docs/accounts.md, "Passwords" and "Sessions").

Sign-in itself is ``POST /admin/auth/login`` (admin_keys.py), passkeys are in account_passkeys.py and
single sign-on under ``/sso``. Every answer that carries a token is ``Cache-Control: no-store``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, BackgroundTasks, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, EmailStr, Field

from agent_server.accounts.links import RESET_PATH
from http_facade.deps import client_ip
from http_facade.gateway_deps import UserDep
from http_facade.routes.admin_common import audit_note

router = APIRouter(tags=["accounts"])
NO_STORE = {"Cache-Control": "no-store"}


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    current_password: str | None = Field(
        default=None, max_length=1024, description="Needed when the account has a password."
    )
    new_password: str = Field(
        max_length=4096, description="12+ characters (at most 1024 bytes), not breached."
    )


class Forgot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr


class Reset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200, description="The token of the link in the mail.")
    password: str = Field(max_length=4096, description="12+ characters (at most 1024 bytes), not breached.")


@router.post("/admin/auth/logout", summary="Sign out: ends every session of the user")
async def logout(claims: UserDep, request: Request) -> dict[str, Any]:
    audit_note(request, action="auth.logout")
    return await request.app.state.accounts.credentials.sign_out(claims.user_id)


@router.post("/admin/auth/password", summary="Change the password; other sessions end, a new token is issued")
async def change_password(
    body: PasswordChange, claims: UserDep, request: Request, response: Response
) -> dict[str, Any]:
    credentials = request.app.state.accounts.credentials
    audit_note(request, action="auth.password_change")
    signed_in = await credentials.change(claims, body.current_password, body.new_password)
    response.headers.update(NO_STORE)
    return signed_in.body()


@router.post(
    "/admin/auth/password/forgot",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Mail a password reset link (the same answer for every address)",
)
async def forgot(body: Forgot, request: Request, background: BackgroundTasks) -> dict[str, Any]:
    credentials = request.app.state.accounts.credentials
    answer = await credentials.forgot(str(body.email), client_ip(request))
    background.add_task(credentials.send_reset, str(body.email))  # after the answer: same timing for all
    return answer


@router.get(RESET_PATH, summary="What a reset or invitation link does (uses nothing up)")
async def reset_link(
    request: Request,
    response: Response,
    token: str = Query(min_length=1, max_length=200, description="The token of the link."),
) -> dict[str, Any]:
    state = await request.app.state.accounts.credentials.link_state(token)
    response.headers.update(NO_STORE)  # the answer repeats the token
    return {
        "object": "password_link",
        "state": state,
        "confirm": {
            "method": "POST",
            "path": RESET_PATH,
            "body": {"token": token, "password": "<new password>"},
        },
    }


@router.post(RESET_PATH, summary="Set a new password with a reset or invitation link, and sign in")
async def reset(body: Reset, request: Request, response: Response) -> dict[str, Any]:
    signed_in = await request.app.state.accounts.credentials.reset(body.token, body.password)
    response.headers.update(NO_STORE)
    audit_note(request, action="auth.password_reset", actor=signed_in.user_id, tenant_id=signed_in.tenant_id)
    return signed_in.body()
