"""Self-serve registration over HTTP (contract 5.5; docs/accounts.md).

``GET``/``OPTIONS /register`` describe the live flow; ``POST /register`` starts it; the link in the
mail leads to ``/register/verify``, whose GET only describes the link and whose POST uses it up.
All three, like the registration page, offer the self-serve plans only (``offer_plans`` puts them in
``/openapi.json`` as the enum of ``plan``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Query, Request, Response, status
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, EmailStr, Field, model_validator

from agent_server.accounts.registration import PASSKEY, PASSWORD, Application
from agent_server.foundation.errors import ValidationFailed
from agent_server.gateway.plans import self_serve_plans
from agent_server.knowledge.pack import Plan
from http_facade.deps import SettingsDep, client_ip, page_origin
from wellknown.registration import consultant_code, registration

router = APIRouter(tags=["accounts"])
NO_STORE = {"Cache-Control": "no-store"}


class RegisterBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr = Field(description="Verified by a one-time link before anything is created.")
    organisation: str = Field(min_length=2, max_length=200, description="The tenant's name.")
    plan: str = Field(
        min_length=1, max_length=40, description="A self-serve plan id from GET /register (its enum here)."
    )
    method: Literal["password", "passkey"] | None = Field(
        default=None, description="Default: password when a password is sent."
    )
    password: str | None = Field(
        default=None, max_length=4096, description="12+ characters (at most 1024 bytes), not breached."
    )
    consultant_code: str | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def _method(self) -> RegisterBody:
        if self.method is None:
            self.method = PASSWORD if self.password is not None else None
        if self.method is None:
            raise ValueError("send a password, or method 'passkey' to create a passkey instead")
        if self.method == PASSWORD and self.password is None:
            raise ValueError("method 'password' needs a password")
        if self.method == PASSKEY and self.password is not None:
            raise ValueError("method 'passkey' takes no password")
        return self


class PasskeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    registration_id: str = Field(min_length=1, max_length=40)
    credential: dict[str, Any] = Field(description="The PublicKeyCredential of navigator.credentials.create.")


class VerifyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200, description="The token of the link in the mail.")
    organisation: str | None = Field(
        default=None, min_length=2, max_length=200, description="Another name, if the first is taken."
    )


def _describe(request: Request) -> dict[str, Any]:
    accounts = request.app.state.accounts
    plans = self_serve_plans(request.app.state.services.knowledge.pack.plans)
    return registration(accounts.settings, plans, accounts.registrations.methods, accounts.sign_in_methods)


def offer_plans(app: FastAPI, plans: Iterable[Plan]) -> None:
    """The self-serve plans as the enum of ``plan`` in the registration bodies of ``/openapi.json``.

    Called by ``create_app`` before its OpenAPI override takes ``app.openapi``: FastAPI's document is
    completed in place, once per app, with this app's content pack."""
    offered = [plan.id for plan in self_serve_plans(plans)]
    generated: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        document = generated()
        schemas = document.get("components", {}).get("schemas", {})
        for name in ("RegisterBody", "RegisterForm"):
            field = schemas.get(name, {}).get("properties", {}).get("plan")
            if field is not None:
                field["enum"] = offered
        return document

    app.openapi = openapi  # type: ignore[method-assign]


@router.get("/register", summary="How self-serve registration works")
async def describe(request: Request) -> dict[str, Any]:
    return _describe(request)


@router.options("/register", summary="How self-serve registration works (OPTIONS)")
async def describe_options(request: Request) -> JSONResponse:
    return JSONResponse(_describe(request), headers={"Allow": "GET, POST, OPTIONS"})


@router.post(
    "/register",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Register: an organisation, its plan and its first admin; a link is mailed to confirm",
)
async def register(
    body: RegisterBody, request: Request, settings: SettingsDep, response: Response
) -> dict[str, Any]:
    if body.consultant_code is not None and not consultant_code(settings, body.consultant_code)["valid"]:
        raise ValidationFailed(
            "Unknown consultant code; check it or register without one.", param="consultant_code"
        )
    application = Application(str(body.email), body.organisation, body.plan, body.password)
    response.headers.update(NO_STORE)  # a passkey registration's answer holds its challenge
    registrations = request.app.state.accounts.registrations
    return await registrations.register(application, client_ip(request), page_origin(request))


@router.post(
    "/register/passkey", summary="Keep the passkey created at registration until the link is followed"
)
async def register_passkey(body: PasskeyBody, request: Request) -> dict[str, Any]:
    return await request.app.state.accounts.registrations.attach_passkey(
        body.registration_id, body.credential
    )


@router.get("/register/verify", summary="What the link in the registration mail does (uses nothing up)")
async def verify_link(
    request: Request,
    response: Response,
    token: str = Query(min_length=1, max_length=200, description="The token of the link."),
) -> dict[str, Any]:
    state = await request.app.state.accounts.registrations.link_state(token)
    response.headers.update(NO_STORE)  # the answer repeats the token
    return {
        "object": "registration_link",
        "state": state,
        "confirm": {"method": "POST", "path": "/register/verify", "body": {"token": token}},
        "message": {
            "valid": "POST the token to finish: the organisation is created and you are signed in.",
            "used": "This link was already used: sign in at /admin/auth/login.",
            "expired": "This link expired: register again to get a new one.",
            "invalid": "This link is not valid: check that the whole link was copied.",
        }[state],
    }


@router.post(
    "/register/verify",
    status_code=status.HTTP_201_CREATED,
    summary="Use the registration link: create the organisation (trial starts) and sign its admin in",
)
async def verify(body: VerifyBody, request: Request, response: Response) -> dict[str, Any]:
    verified = await request.app.state.accounts.registrations.verify(body.token, body.organisation)
    response.headers.update(NO_STORE)
    return verified.body()
