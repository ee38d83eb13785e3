"""Bring your own key (BYOK): a tenant admin stores the tenant's own key for an LLM provider; models
marked BYOK are then called with it (docs/models-and-keys.md). The key is encrypted at rest and
never shown again, only its last four characters. Storing one needs the plan's ``byok`` feature.
Included by ``admin_keys``'s router.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from agent_server.gateway.byok import view
from agent_server.gateway.service import Gateway
from http_facade.gateway_deps import GatewayDep
from http_facade.routes.admin_common import ActorDep, audit_note, require_feature

router = APIRouter(tags=["admin: byok"])


def known_provider(
    _: ActorDep,
    request: Request,
    provider: Annotated[str, Path(min_length=1, max_length=100, description="e.g. openai")],
) -> str:
    """404 for a provider no upstream or model names: after the admin check, before the body."""
    request.app.state.gateway.byok.check_provider(provider)
    return provider


ProviderDep = Annotated[str, Depends(known_provider)]


class ProviderKeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api_key: str = Field(min_length=8, max_length=1000, pattern=r"^\S+$", description="Stored encrypted.")


def _forget_cached_keys(gateway: Gateway, tenant_id: str) -> None:
    # The tenant's API keys carry its provider keys in the key cache: this process drops them now,
    # others within the key cache TTL.
    gateway.keys.invalidate_tenant(tenant_id)


@router.get("/admin/byok", summary="The tenant's own provider keys (hints only) and the known providers")
async def list_provider_keys(actor: ActorDep, gateway: GatewayDep) -> dict[str, Any]:
    records = await gateway.byok.list(actor.tenant_id)
    return {
        "object": "list",
        "providers": sorted(gateway.byok.providers),
        "data": [view(record) for record in records],
    }


@router.put("/admin/byok/{provider}", summary="Store or replace the tenant's own key for a provider")
async def put_provider_key(
    provider: ProviderDep, body: ProviderKeyBody, actor: ActorDep, gateway: GatewayDep, request: Request
) -> dict[str, Any]:
    await require_feature(request, actor, "byok")
    record = await gateway.byok.put(actor.tenant_id, provider, body.api_key)
    _forget_cached_keys(gateway, actor.tenant_id)
    audit_note(request, action="byok.put", target=provider)
    return view(record)


@router.get("/admin/byok/{provider}", summary="The tenant's own key for a provider (its hint only)")
async def get_provider_key(provider: ProviderDep, actor: ActorDep, gateway: GatewayDep) -> dict[str, Any]:
    return view(await gateway.byok.get(actor.tenant_id, provider))


@router.delete("/admin/byok/{provider}", summary="Delete the tenant's own key for a provider")
async def delete_provider_key(
    provider: ProviderDep, actor: ActorDep, gateway: GatewayDep, request: Request
) -> dict[str, Any]:
    await gateway.byok.delete(actor.tenant_id, provider)
    _forget_cached_keys(gateway, actor.tenant_id)
    audit_note(request, action="byok.delete", target=provider)
    return {"object": "byok_key", "provider": provider, "deleted": True}
