"""Tenant administration: login, API keys (create, list, show, change, revoke, rotate) and usage.

Every route but login needs an admin JWT and acts on the caller's own tenant (from the token); a key
id of another tenant is answered exactly like a missing one (404). Secrets appear only in the
response that creates them (create, rotate); lists show the prefix and the last four characters.
A key's optional settings (models, budget, expiry, metadata) and its spend: docs/models-and-keys.md.
The tenant's own provider keys (BYOK) are routes of ``admin_byok``, included here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agent_server.gateway.key_admin import MAX_OVERLAP
from agent_server.gateway.key_settings import BudgetSpec, KeyName, KeyOptions, Metadata, ModelEntry
from agent_server.gateway.repository import find_key
from agent_server.gateway.repository import list_keys as tenant_keys
from agent_server.gateway.service import Gateway
from agent_server.gateway.tables import ApiKey, unix
from agent_server.gateway.usage_range import usage_period
from agent_server.gateway.usage_report import usage_report
from http_facade.deps import IsoDay, client_ip
from http_facade.gateway_deps import AdminDep, GatewayDep
from http_facade.routes import admin_byok
from http_facade.routes.admin_common import audit_note

router = APIRouter(tags=["admin"])
router.include_router(admin_byok.router)
NO_STORE = "no-store"
SCOPES = "Any of chat, embeddings, files, models, admin (and allowed by the plan)."


class Login(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class TokenResponse(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int


class KeyCreate(KeyOptions):
    name: KeyName  # trimmed; never blank
    scopes: list[str] | None = Field(
        default=None, min_length=1, max_length=5, description=SCOPES + " Not sent: chat and models."
    )


class KeyPatch(KeyOptions):
    """Fields sent replace the key's; ``null`` clears models, budget, expires_at or metadata."""

    name: KeyName | None = None
    scopes: list[str] | None = Field(default=None, min_length=1, max_length=5, description=SCOPES)


class KeyRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_id: str = Field(min_length=1, max_length=40, description="The key_… id of the key to replace.")
    overlap_seconds: int = Field(
        default=0,
        ge=0,
        le=MAX_OVERLAP,
        description="How long the old key keeps working beside the new one (at most 7 days); 0: it stops at once.",
    )


class KeySpend(BaseModel):
    period: Literal["day", "month", "total"] = Field(description="The budget's period; total without one.")
    period_start: int | None
    period_end: int | None
    tokens: int
    cost: int = Field(description="Minor units of `currency`, rounded half up.")
    cost_micros: int = Field(description="Millionths of a minor unit, exact.")
    currency: str


class KeyView(BaseModel):
    id: str
    object: str = "api_key"
    name: str
    scopes: list[str]
    environment: str
    redacted: str = Field(description="Prefix and last four characters, e.g. sk_test_…Ab12.")
    created_at: int
    revoked_at: int | None = Field(
        description="When it stopped, or stops: a rotation with an overlap sets a time in the future."
    )
    replaced_by: str | None
    models: list[ModelEntry] | None
    budget: BudgetSpec | None
    expires_at: int | None
    metadata: Metadata | None
    log_bodies_days: int | None = Field(
        default=None, description="Days the request log keeps this key's bodies; null: none are stored."
    )
    last_used_at: int | None = Field(
        default=None,
        description="When the key last made a request, as its usage is written (a second or so behind); null: never.",
    )
    spend: KeySpend | None = None


class CreatedKey(KeyView):
    key: str = Field(description="The full key. Shown only in this response; store it now.")
    rotated_from: str | None = None
    old_key_revoked_at: int | None = Field(
        default=None, description="Rotation: when the old key stops working (now, or the overlap's end)."
    )


class KeyList(BaseModel):
    object: str = "list"
    data: list[KeyView]


def _ts(value: Any) -> int | None:
    return None if value is None else int(unix(value))


def view(record: ApiKey) -> dict[str, Any]:
    budget = None
    if record.budget_period is not None:
        budget = {
            "period": record.budget_period,
            "max_tokens": record.budget_tokens,
            "max_spend": record.budget_spend,
        }
    return {
        "id": record.id,
        "name": record.name,
        "scopes": list(record.scopes),
        "environment": record.environment,
        "redacted": f"{record.prefix}…{record.last4}",
        "created_at": _ts(record.created_at),
        "revoked_at": _ts(record.revoked_at),
        "replaced_by": record.replaced_by,
        "models": record.models,
        "budget": budget,
        "expires_at": _ts(record.expires_at),
        "metadata": record.key_metadata,
        "log_bodies_days": record.log_bodies_days,
        "last_used_at": _ts(record.last_used_at),
    }


async def _with_spend(gateway: Gateway, tenant_id: str, records: list[ApiKey]) -> list[KeyView]:
    """The keys as shown; the caller flushed the usage writer before it read them (``_fresh``)."""
    spend = await gateway.key_admin.spend(tenant_id, records)
    return [KeyView(**view(record), spend=spend[record.id]) for record in records]


async def _fresh(gateway: Gateway) -> None:
    """Write the rows the usage writer still holds: spend and ``last_used_at`` are then current."""
    await gateway.usage.flush()


@router.post("/admin/auth/login", summary="Exchange e-mail and password for an admin JWT")
async def login(body: Login, gateway: GatewayDep, request: Request, response: Response) -> TokenResponse:
    signed_in = await gateway.login(body.email, body.password, client=client_ip(request))
    response.headers["Cache-Control"] = NO_STORE  # a token: never kept by a cache
    return TokenResponse(access_token=signed_in.access_token, expires_in=signed_in.expires_in)


@router.post("/admin/api-keys", status_code=status.HTTP_201_CREATED, summary="Create an API key")
async def create_key(body: KeyCreate, admin: AdminDep, gateway: GatewayDep, response: Response) -> CreatedKey:
    record, full = await gateway.key_admin.issue(admin.tenant_id, body.name, body.scopes, body)
    response.headers["Cache-Control"] = NO_STORE  # the key itself: shown once, kept by nobody
    return CreatedKey(**view(record), key=full)


@router.get("/admin/api-keys", summary="The tenant's API keys with their spend, without secrets")
async def list_keys(admin: AdminDep, gateway: GatewayDep) -> KeyList:
    await _fresh(gateway)
    records = await tenant_keys(gateway.db, admin.tenant_id)
    return KeyList(data=await _with_spend(gateway, admin.tenant_id, records))


@router.get("/admin/api-keys/{key_id}", summary="One API key with its spend, without its secret")
async def show_key(key_id: str, admin: AdminDep, gateway: GatewayDep) -> KeyView:
    await _fresh(gateway)
    record = await find_key(gateway.db, admin.tenant_id, key_id)
    return (await _with_spend(gateway, admin.tenant_id, [record]))[0]


@router.patch(
    "/admin/api-keys/{key_id}", summary="Change a key's name, scopes, models, budget, expiry or metadata"
)
async def change_key(
    key_id: str, body: KeyPatch, admin: AdminDep, gateway: GatewayDep, request: Request
) -> KeyView:
    # The body is the options too: only the fields it sets change (KeyAdmin.update).
    await _fresh(gateway)
    record = await gateway.key_admin.update(
        admin.tenant_id, key_id, name=body.name, scopes=body.scopes, options=body
    )
    audit_note(
        request, action="api_key.update", target=key_id, details={"fields": sorted(body.model_fields_set)}
    )
    return (await _with_spend(gateway, admin.tenant_id, [record]))[0]


@router.delete("/admin/api-keys/{key_id}", summary="Revoke an API key at once and for good")
async def revoke_key(key_id: str, admin: AdminDep, gateway: GatewayDep) -> KeyView:
    return KeyView(**view(await gateway.revoke_key(admin.tenant_id, key_id)))


@router.post(
    "/admin/keys/rotate",
    status_code=status.HTTP_201_CREATED,
    summary="Replace a key; the old one stops at once, or after overlap_seconds",
)
async def rotate_key(body: KeyRotate, admin: AdminDep, gateway: GatewayDep, response: Response) -> CreatedKey:
    old, new, full = await gateway.key_admin.rotate(admin.tenant_id, body.key_id, body.overlap_seconds)
    response.headers["Cache-Control"] = NO_STORE
    return CreatedKey(**view(new), key=full, rotated_from=old.id, old_key_revoked_at=_ts(old.revoked_at))


@router.get(
    "/admin/usage",
    summary="Requests, tokens and spend of the tenant: per key and model (and day), split by day, model "
    "and key, and the month so far against the plan",
)
async def usage(
    admin: AdminDep,
    gateway: GatewayDep,
    group_by: Annotated[
        Literal["key_model", "day"], Query(description="day: one row per key, model and UTC day.")
    ] = "key_model",
    start: Annotated[IsoDay | None, Query(description="First UTC day included (YYYY-MM-DD).")] = None,
    end: Annotated[IsoDay | None, Query(description="Last UTC day included (YYYY-MM-DD).")] = None,
) -> dict[str, Any]:
    period = usage_period(start, end)
    return await usage_report(gateway, admin.tenant_id, period, by_day=group_by == "day")
