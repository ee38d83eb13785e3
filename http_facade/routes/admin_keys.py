"""Tenant administration: login, API keys (create, list, revoke, rotate) and usage.

Every route but login needs an admin JWT and acts on the caller's own tenant (from the token); a key
id of another tenant is answered exactly like a missing one (404). Secrets appear only in the
response that creates them (create, rotate); lists show the prefix and the last four characters.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agent_server.gateway.repository import list_keys as tenant_keys
from agent_server.gateway.tables import ApiKey
from agent_server.gateway.usage import summarise
from http_facade.gateway_deps import AdminDep, GatewayDep

router = APIRouter(tags=["admin"])
NO_STORE = "no-store"


class Login(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class TokenResponse(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="A label for people.")
    scopes: list[str] = Field(
        min_length=1, max_length=5, description="Any of chat, embeddings, files, models, admin."
    )


class KeyRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_id: str = Field(min_length=1, max_length=40, description="The key_… id of the key to replace.")


class KeyView(BaseModel):
    id: str
    object: str = "api_key"
    name: str
    scopes: list[str]
    environment: str
    redacted: str = Field(description="Prefix and last four characters, e.g. sk_test_…Ab12.")
    created_at: int
    revoked_at: int | None
    replaced_by: str | None


class CreatedKey(KeyView):
    key: str = Field(description="The full key. Shown only in this response; store it now.")
    rotated_from: str | None = None


class KeyList(BaseModel):
    object: str = "list"
    data: list[KeyView]


def _ts(value: datetime | None) -> int | None:
    """Unix time of a stored datetime (aware UTC; a naive one is taken as UTC)."""
    if value is None:
        return None
    return int((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp())


def view(record: ApiKey) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "scopes": list(record.scopes),
        "environment": record.environment,
        "redacted": f"{record.prefix}…{record.last4}",
        "created_at": _ts(record.created_at),
        "revoked_at": _ts(record.revoked_at),
        "replaced_by": record.replaced_by,
    }


@router.post("/admin/auth/login", summary="Exchange e-mail and password for an admin JWT")
async def login(body: Login, gateway: GatewayDep, response: Response) -> TokenResponse:
    signed_in = await gateway.login(body.email, body.password)
    response.headers["Cache-Control"] = NO_STORE  # a token: never kept by a cache
    return TokenResponse(access_token=signed_in.access_token, expires_in=signed_in.expires_in)


@router.post("/admin/api-keys", status_code=status.HTTP_201_CREATED, summary="Create an API key")
async def create_key(body: KeyCreate, admin: AdminDep, gateway: GatewayDep, response: Response) -> CreatedKey:
    record, full = await gateway.issue_key(admin.tenant_id, body.name, body.scopes)
    response.headers["Cache-Control"] = NO_STORE  # the key itself: shown once, kept by nobody
    return CreatedKey(**view(record), key=full)


@router.get("/admin/api-keys", summary="The tenant's API keys, without secrets")
async def list_keys(admin: AdminDep, gateway: GatewayDep) -> KeyList:
    records = await tenant_keys(gateway.db, admin.tenant_id)
    return KeyList(data=[KeyView(**view(record)) for record in records])


@router.delete("/admin/api-keys/{key_id}", summary="Revoke an API key at once and for good")
async def revoke_key(key_id: str, admin: AdminDep, gateway: GatewayDep) -> KeyView:
    return KeyView(**view(await gateway.revoke_key(admin.tenant_id, key_id)))


@router.post(
    "/admin/keys/rotate",
    status_code=status.HTTP_201_CREATED,
    summary="Replace a key; the old one stops at once",
)
async def rotate_key(body: KeyRotate, admin: AdminDep, gateway: GatewayDep, response: Response) -> CreatedKey:
    old, new, full = await gateway.rotate_key(admin.tenant_id, body.key_id)
    response.headers["Cache-Control"] = NO_STORE
    return CreatedKey(**view(new), key=full, rotated_from=old.id)


@router.get("/admin/usage", summary="Requests and tokens per key and model of the caller's tenant")
async def usage(admin: AdminDep, gateway: GatewayDep) -> dict[str, Any]:
    await gateway.usage.flush()  # include what the writer still holds, so the summary is current
    return {
        "object": "list",
        "tenant_id": admin.tenant_id,
        "data": await summarise(gateway.db, admin.tenant_id),
    }
