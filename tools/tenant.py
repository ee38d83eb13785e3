"""The tenant's own tools (docs/oauth.md, "MCP"): usage this month, its API keys, the request log.

They answer for the organisation of the caller's OAuth access token on ``/api/mcp.php``, each behind
a scope of that token; an anonymous caller never sees them. They call the same services as the
admin API's routes (``GET /admin/usage/month``-style reports, ``/admin/api-keys``, ``/admin/logs``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.foundation.errors import PermissionDenied
from agent_server.foundation.timeutil import iso
from agent_server.gateway import repository as repo
from agent_server.gateway.request_log import LogFilters, list_requests
from agent_server.gateway.service import Gateway
from agent_server.gateway.usage_month import month_to_date

KEY_SCOPES = ("chat", "embeddings", "files", "models")  # what a key made here may get; never admin


def _gateway(ctx: ToolContext) -> Gateway:
    return ctx.services.extras["gateway"]


def _tenant(ctx: ToolContext) -> str:
    if not ctx.principal.tenant_id:
        raise PermissionDenied("This tool answers for an organisation: connect with an OAuth access token.")
    return ctx.principal.tenant_id


class UsageReport(BaseModel):
    report: dict[str, Any] = Field(description="Requests, tokens and spend this month, and the plan's quota.")


@tool(title="Usage and spend this month", scope="usage:read")
async def get_usage_this_month(ctx: ToolContext) -> UsageReport:
    """Your organisation's usage this calendar month (UTC): requests, tokens, spend, and the plan's quota."""
    return UsageReport(report=await month_to_date(_gateway(ctx), _tenant(ctx)))


class KeyView(BaseModel):
    id: str
    name: str
    scopes: list[str]
    redacted: str = Field(description="Prefix and last four characters.")
    created_at: str
    expires_at: str | None
    live: bool


class KeyList(BaseModel):
    keys: list[KeyView]


@tool(title="List the API keys", scope="keys:read")
async def list_api_keys(ctx: ToolContext) -> KeyList:
    """Your organisation's API keys (never their secrets), newest last, live or not."""
    now = _gateway(ctx).clock.now()
    keys = [
        KeyView(
            id=k.id,
            name=k.name,
            scopes=list(k.scopes),
            redacted=f"{k.prefix}…{k.last4}",
            created_at=iso(k.created_at),
            expires_at=iso(k.expires_at) if k.expires_at else None,
            live=(k.revoked_at is None or k.revoked_at.timestamp() > now)
            and (k.expires_at is None or k.expires_at.timestamp() > now),
        )
        for k in await repo.list_keys(_gateway(ctx).db, _tenant(ctx))
    ]
    return KeyList(keys=keys)


class CreatedKey(BaseModel):
    id: str
    key: str = Field(description="The full key: shown this once.")
    scopes: list[str]


@tool(title="Create an API key", scope="keys:write", read_only=False, idempotent=False)
async def create_api_key(
    ctx: ToolContext,
    name: Annotated[str, Field(min_length=1, max_length=200, description="A label for people.")],
    scopes: Annotated[
        list[str], Field(min_length=1, max_length=4, description="Among chat, embeddings, files, models.")
    ],
) -> CreatedKey:
    """Create an API key of your organisation, with scopes your access token holds (never admin)."""
    wanted = set(scopes)
    allowed = set(KEY_SCOPES) & ctx.principal.scopes
    if not wanted <= allowed:
        raise PermissionDenied(
            f"Your access token lets you give keys only these scopes: {', '.join(sorted(allowed)) or 'none'}.",
            param="scopes",
        )
    record, full = await _gateway(ctx).key_admin.issue(_tenant(ctx), name, sorted(wanted))
    return CreatedKey(id=record.id, key=full, scopes=list(record.scopes))


class RecentRequests(BaseModel):
    requests: list[dict[str, Any]]


@tool(title="Recent requests", scope="logs:read")
async def get_recent_requests(
    ctx: ToolContext,
    limit: Annotated[int, Field(ge=1, le=50, description="How many, newest first.")] = 10,
) -> RecentRequests:
    """The newest entries of your organisation's request log: model, status, tokens, latency, key."""
    page = await list_requests(_gateway(ctx).db, _tenant(ctx), LogFilters(limit=limit))
    return RecentRequests(requests=page["data"])


TENANT_TOOLS = (get_usage_this_month, list_api_keys, create_api_key, get_recent_requests)
