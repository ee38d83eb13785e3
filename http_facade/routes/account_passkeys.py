"""Passkeys (docs/accounts.md, "Passkeys"): a signed-in user's credentials, and sign-in with one.

Management acts on the caller's own passkeys (from the token); another user's passkey id answers
404 like a missing one. Adding one needs a sign-in of the last 10 minutes (403
``recent_sign_in_required``), so a stolen session cannot leave a way in that outlives it, and the
user is told by mail. Views show no key material. Sign-in answers like the password login, plus
``user_id`` and ``tenant_id``, with ``Cache-Control: no-store``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field
from starlette.convertors import StringConvertor, register_url_convertor

from agent_server.accounts.passkey_tables import MAX_NAME_CHARS, PasskeyCredential
from agent_server.accounts.passkeys import Passkeys
from agent_server.accounts.sessions import require_recent_sign_in
from http_facade.deps import client_ip, page_origin
from http_facade.gateway_deps import AdminDep
from http_facade.routes.admin_common import audit_note


class PasskeyIdConvertor(StringConvertor):
    """Any path segment but ``options``. OpenAPI matches a concrete path before a template, so
    ``/admin/auth/passkeys/options`` is its own resource (POST alone); without this ``{passkey_id}``
    took it too, served PATCH and DELETE there (404) and listed them in its 405 ``Allow``."""

    regex = "(?!options$)[^/]+"


register_url_convertor("passkey_id", PasskeyIdConvertor())
router = APIRouter(tags=["accounts"])
NO_STORE = {"Cache-Control": "no-store"}
ADD_A_PASSKEY = "add a passkey"
CREDENTIAL = "The PublicKeyCredential from the browser, in its JSON form (toJSON())."


class PasskeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    credential: dict[str, Any] = Field(description=CREDENTIAL)
    name: str = Field(default="Passkey", min_length=1, max_length=MAX_NAME_CHARS, description="A label.")


class PasskeyRename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)


class SignInStart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str | None = Field(
        default=None, min_length=3, max_length=320, description="Omit for a discoverable passkey."
    )


class SignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: str = Field(
        min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description="From the options."
    )
    credential: dict[str, Any] = Field(description=CREDENTIAL)


class CreationOptions(BaseModel):
    options: dict[str, Any] = Field(
        description="For navigator.credentials.create() (parseCreationOptionsFromJSON)."
    )


class RequestOptions(BaseModel):
    state: str = Field(description="Send it back with the credential.")
    options: dict[str, Any] = Field(
        description="For navigator.credentials.get() (parseRequestOptionsFromJSON)."
    )


class PasskeyView(BaseModel):
    id: str
    object: str = "passkey"
    name: str
    created_at: int
    last_used_at: int | None
    transports: list[str]
    backed_up: bool = Field(description="Synced by a passkey provider (usable on several devices).")


class PasskeyList(BaseModel):
    object: str = "list"
    data: list[PasskeyView]


class PasskeyDeleted(BaseModel):
    id: str
    object: str = "passkey"
    deleted: bool = True


class SignedIn(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int
    user_id: str
    tenant_id: str


def passkeys_of(request: Request) -> Passkeys:
    return request.app.state.accounts.passkeys


def unix(value: datetime) -> int:
    """Unix time of a stored datetime (aware UTC; SQLite may hand back a naive one, taken as UTC)."""
    return int((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp())


def view(row: PasskeyCredential) -> PasskeyView:
    return PasskeyView(
        id=row.id,
        name=row.name,
        created_at=unix(row.created_at),
        last_used_at=unix(row.last_used_at) if row.last_used_at else None,
        transports=list(row.transports),
        backed_up=row.backed_up,
    )


@router.post("/admin/auth/passkeys/options", summary="Options to create a passkey for the signed-in user")
async def creation_options(claims: AdminDep, request: Request) -> CreationOptions:
    passkeys = passkeys_of(request)
    require_recent_sign_in(claims, passkeys.clock.now(), ADD_A_PASSKEY)
    return CreationOptions(options=await passkeys.options_for(claims.user_id, page_origin(request)))


@router.post(
    "/admin/auth/passkeys", status_code=status.HTTP_201_CREATED, summary="Save the passkey just created"
)
async def add_passkey(body: PasskeyCreate, claims: AdminDep, request: Request) -> PasskeyView:
    passkeys = passkeys_of(request)
    require_recent_sign_in(claims, passkeys.clock.now(), ADD_A_PASSKEY)
    row = await passkeys.add(claims.user_id, body.credential, body.name, request.app.state.accounts.mailer)
    audit_note(request, action="passkey.add", target=row.id)
    return view(row)


@router.get("/admin/auth/passkeys", summary="The signed-in user's passkeys, without key material")
async def list_passkeys(claims: AdminDep, request: Request) -> PasskeyList:
    return PasskeyList(data=[view(row) for row in await passkeys_of(request).of_user(claims.user_id)])


@router.patch("/admin/auth/passkeys/{passkey_id:passkey_id}", summary="Rename a passkey")
async def rename_passkey(
    passkey_id: str, body: PasskeyRename, claims: AdminDep, request: Request
) -> PasskeyView:
    row = await passkeys_of(request).rename(claims.user_id, passkey_id, body.name)
    audit_note(request, action="passkey.rename")
    return view(row)


@router.delete(
    "/admin/auth/passkeys/{passkey_id:passkey_id}", summary="Remove a passkey; it can no longer sign in"
)
async def delete_passkey(passkey_id: str, claims: AdminDep, request: Request) -> PasskeyDeleted:
    await passkeys_of(request).remove(claims.user_id, passkey_id)
    audit_note(request, action="passkey.delete")
    return PasskeyDeleted(id=passkey_id)


@router.post("/admin/auth/passkey/options", summary="Options to sign in with a passkey")
async def request_options(request: Request, body: SignInStart | None = None) -> RequestOptions:
    email = body.email if body is not None else None
    options = await passkeys_of(request).request_options(email, client_ip(request), page_origin(request))
    return RequestOptions(**options)


@router.post("/admin/auth/passkey", summary="Sign in with a passkey: an admin JWT like the password login")
async def sign_in(body: SignIn, request: Request, response: Response) -> SignedIn:
    user = await passkeys_of(request).authenticate(body.state, body.credential)
    await request.app.state.gateway.refuse_if_sso_enforced(user)
    response.headers.update(NO_STORE)
    audit_note(request, action="auth.passkey_login", actor=user.id, tenant_id=user.tenant_id)
    return SignedIn(**request.app.state.accounts.sessions.issue(user).body())
