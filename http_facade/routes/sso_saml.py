"""SAML 2.0 sign-in: the tenant admin's connection settings and the service provider's endpoints.

The admin routes act on the token's tenant; the /sso/saml routes are public (the browser arrives from
the IdP without our credentials). Logic: agent_server/accounts/sso/saml.py. A sign-in started from
the dashboard (its RelayState is a marker) finishes into its session (pages/dashboard/sso_handoff.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Path, Query, Request, Response, status
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from agent_server.accounts.sso.saml import RELAY_STATE_MAX, SamlSignIn
from agent_server.accounts.sso.service import sso_of
from http_facade.deps import client_ip
from http_facade.pages.dashboard import sso_handoff
from http_facade.routes.admin_common import ActorDep, audit_note, require_feature

router = APIRouter(tags=["single sign-on: SAML"])
Permission = Annotated[str, Field(min_length=1, max_length=40)]
TenantId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]
METADATA_TYPE = "application/samlmetadata+xml"
NO_STORE = {"Cache-Control": "no-store"}


class SamlSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idp_metadata_xml: str | None = Field(
        default=None,
        min_length=1,
        max_length=200_000,
        description="The identity provider's SAML 2.0 metadata XML.",
    )
    idp_metadata_url: str | None = Field(
        default=None,
        min_length=8,
        max_length=2048,
        description="Instead of the XML: where the IdP publishes it (fetched now, through the outbound URL guard).",
    )
    enabled: StrictBool = Field(default=True, description="false: keep the settings but refuse sign-ins.")
    jit_permissions: list[Permission] = Field(
        default_factory=lambda: ["tenant:admin"],
        max_length=5,
        description="Permissions of users created at their first sign-in: tenant:admin, or [] for none.",
    )

    @model_validator(mode="after")
    def one_source(self) -> SamlSettings:
        if (self.idp_metadata_xml is None) == (self.idp_metadata_url is None):
            raise ValueError("send either idp_metadata_xml or idp_metadata_url")
        return self

    async def metadata_xml(self, request: Request) -> str:
        if self.idp_metadata_xml is not None:
            return self.idp_metadata_xml
        http = sso_of(request.app.state.accounts).http
        return await http.get_text(str(self.idp_metadata_url), "SAML metadata", "idp_metadata_url")


class AcsForm(BaseModel):
    """The HTTP-POST binding's form, as the IdP's page submits it."""

    model_config = ConfigDict(extra="forbid")

    SAMLResponse: str = Field(min_length=1, max_length=262_144)
    RelayState: str = Field(default="", max_length=RELAY_STATE_MAX)


def saml_of(request: Request) -> SamlSignIn:
    return SamlSignIn(request.app.state.accounts)


@router.get("/admin/sso/saml", summary="The tenant's SAML connection and what its IdP needs from us")
async def get_settings(request: Request, actor: ActorDep) -> dict[str, Any]:
    return await saml_of(request).view(actor.tenant_id)


@router.put("/admin/sso/saml", summary="Connect (or replace) the tenant's SAML identity provider")
async def put_settings(request: Request, actor: ActorDep, body: SamlSettings) -> dict[str, Any]:
    await require_feature(request, actor, "sso")  # single sign-on is a plan feature (plans.yaml)
    view = await saml_of(request).save(
        actor.tenant_id,
        await body.metadata_xml(request),
        enabled=body.enabled,
        jit_permissions=list(body.jit_permissions),
    )
    audit_note(request, action="sso.saml.configure", target=view["idp"]["entity_id"])
    return view


@router.delete(
    "/admin/sso/saml",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove the tenant's SAML connection",
)
async def delete_settings(request: Request, actor: ActorDep) -> Response:
    await saml_of(request).remove(actor.tenant_id)
    audit_note(request, action="sso.saml.delete")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/sso/saml/{tenant_id}/metadata",
    summary="Our SAML service provider metadata for this tenant (its entity id is this URL)",
    response_class=Response,
    responses={200: {"content": {METADATA_TYPE: {}}, "description": "SAML 2.0 metadata XML."}},
)
async def sp_metadata(request: Request, tenant_id: TenantId) -> Response:
    return Response(await saml_of(request).sp_metadata(tenant_id), media_type=METADATA_TYPE)


@router.get(
    "/sso/saml/{tenant_id}/start",
    status_code=status.HTTP_302_FOUND,
    summary="Begin SAML sign-in: 302 to the tenant's identity provider with an AuthnRequest",
    response_class=RedirectResponse,
)
async def start(
    request: Request,
    tenant_id: TenantId,
    relay_state: Annotated[
        str, Query(max_length=RELAY_STATE_MAX, description="Opaque; returned by the ACS after sign-in.")
    ] = "",
) -> RedirectResponse:
    url = await saml_of(request).start(tenant_id, relay_state, client_ip(request))
    return RedirectResponse(url, status_code=status.HTTP_302_FOUND, headers=NO_STORE)


@router.post(
    "/sso/saml/{tenant_id}/acs",
    summary="SAML assertion consumer (HTTP-POST binding): checks the response, answers an admin JWT",
    response_model=dict[str, Any],
)
async def acs(
    request: Request, tenant_id: TenantId, form: Annotated[AcsForm, Form()], response: Response
) -> Any:
    user, relay_state = await saml_of(request).finish(tenant_id, form.SAMLResponse, form.RelayState)
    signed_in = request.app.state.accounts.sessions.issue(user)
    if sso_handoff.is_marker(relay_state):  # started from the dashboard: finish into its session
        return await sso_handoff.hand_off(request, signed_in, relay_state)
    response.headers.update(NO_STORE)  # the body carries a bearer token
    return {**signed_in.body(), "relay_state": relay_state or None}
