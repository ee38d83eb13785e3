"""What the bridge offers the operator's services: the registry's tools and a few gateway operations.

Each method takes validated params (a pydantic model, unknown fields refused) and returns a JSON
object; failures raise the service's own errors, which the bridge maps to JSON-RPC (bridge.py).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_server.capabilities.context import Principal, ToolContext
from agent_server.capabilities.registry import Registry
from agent_server.foundation.errors import AgentError, NotFound, ValidationFailed
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway import repository
from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.plans import PlanInfo
from agent_server.gateway.service import Caller, Gateway


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoParams(Params):
    pass


class ToolCall(Params):
    name: str = Field(min_length=1, max_length=64)
    arguments: dict[str, Any] = Field(default_factory=dict)


class KeyParam(Params):
    key: str = Field(min_length=1, max_length=200, description="The API key as its holder sent it.")


class UsageReport(KeyParam):
    model: str = Field(min_length=1, max_length=200)
    endpoint: str = Field(min_length=1, max_length=40, description="e.g. /v1/embeddings")
    status: int = Field(default=200, ge=100, le=599)
    prompt_tokens: int = Field(default=0, ge=0, le=1_000_000_000)
    completion_tokens: int = Field(default=0, ge=0, le=1_000_000_000)
    latency_ms: float = Field(default=0.0, ge=0, le=3_600_000)
    backend: str = Field(default="external", min_length=1, max_length=100)
    stream: bool = False


class TenantParam(Params):
    tenant_id: str = Field(min_length=1, max_length=200, description="The tenant's id (ten_...) or name.")


class BridgeMethods:
    """The methods, bound to the registry and the gateway of one app."""

    def __init__(self, registry: Registry, gateway: Gateway) -> None:
        self.registry, self.gateway = registry, gateway

    async def tools_list(self, caller: Principal, _: NoParams) -> dict[str, Any]:
        tools = [
            {
                "name": spec.name,
                "title": spec.title,
                "description": spec.description,
                "input_schema": spec.input_schema,
                "output_schema": spec.output_schema,
                "read_only": spec.meta.read_only,
            }
            for spec in self.registry.tools
        ]
        return {"tools": tools}

    async def tools_call(self, caller: Principal, params: ToolCall) -> dict[str, Any]:
        """``Registry.invoke``, the one call path: scope, validation, timeout, the log line."""
        ctx = ToolContext(self.gateway.services, principal=caller, surface="internal")
        result = await self.registry.invoke(params.name, params.arguments, ctx)
        return {"name": params.name, "result": result.model_dump(mode="json")}

    async def keys_verify(self, caller: Principal, params: KeyParam) -> dict[str, Any]:
        """Who holds the key, as the gateway sees it on ``/v1`` (same cache, same revocation lag);
        never its digest or secret. An unusable key is ``valid: false`` with the reason."""
        try:
            key = await self.gateway.keys.authenticate(params.key)
        except AgentError as err:
            return {"valid": False, "reason": err.message}
        return {"valid": True, **_key(key)}

    async def usage_report(self, caller: Principal, params: UsageReport) -> dict[str, Any]:
        """One usage row through ``Gateway.record``: priced for live keys, counted against the key's
        budget, written by the usage writer like the gateway's own rows."""
        try:
            key = await self.gateway.keys.authenticate(params.key)
        except AgentError as err:
            raise ValidationFailed(
                f"No usage is recorded for this key: {err.message}", code="invalid_api_key", param="key"
            ) from None
        started = time.perf_counter() - params.latency_ms / 1000
        await self.gateway.record(
            Caller(key, {}, started),
            params.endpoint,
            params.model,
            params.status,
            params.backend,
            prompt_tokens=params.prompt_tokens,
            completion_tokens=params.completion_tokens,
            stream=params.stream,
        )
        return {"recorded": True, "key_id": key.key_id, "tenant_id": key.tenant_id}

    async def tenants_plan(self, caller: Principal, params: TenantParam) -> dict[str, Any]:
        tenant = await repository.find_tenant(self.gateway.db, params.tenant_id)
        if tenant is None:
            raise NotFound(f"No tenant '{params.tenant_id}'.", param="tenant_id")
        plan = self.gateway.catalog.get(tenant.plan_id)
        negotiated = self.gateway.services.settings.negotiated_rate_limit
        return {
            "tenant_id": tenant.id,
            "name": tenant.name,
            "plan": _plan(plan),
            "rate_limit_per_minute": plan.limit_for(tenant.rate_limit_per_minute, negotiated),
            "trial_ends_at": iso(tenant.trial_ends_at),
        }


def _plan(plan: PlanInfo) -> dict[str, Any]:
    return {
        "id": plan.id,
        "name": plan.name,
        "requests_per_minute": plan.requests_per_minute,
        "trial_days": plan.trial_days,
        "scopes": sorted(plan.scopes),
        "features": sorted(plan.features),
        "models": list(plan.grant.entries),
    }


def _key(key: KeyPrincipal) -> dict[str, Any]:
    return {
        "key_id": key.key_id,
        "tenant_id": key.tenant_id,
        "environment": key.environment,
        "scopes": sorted(key.scopes),
        "plan": _plan(key.plan),
        "rate_limit_per_minute": key.rate_limit,
        "models": list(key.models.entries) if key.models is not None else None,
        "expires_at": iso(utc(key.expires_at)) if key.expires_at is not None else None,
    }
