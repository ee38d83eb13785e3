"""Gateway tables: plans, tenants, users, API keys and usage records (migration 0002_gateway); key
settings, spend and tenants' own provider keys (migration 0012_keys_spend_byok); self-serve plans and
contract ends (migration 0018_negotiated_plans); the request log's columns and stored bodies
(migration 0017_request_log); members' roles (migration 0019_members).

Times are aware UTC ``datetime`` (SQLModel's UTCDateTime; ``DateTime(timezone=True)`` columns). JSON list columns hold small sets
(scopes, models, features, permissions) that are always read whole.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel


def unix(value: datetime) -> float:
    """Unix time of a stored datetime: aware UTC, or naive UTC as SQLite gives it back."""
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


class PlanRecord(SQLModel, table=True):
    """A subscription plan, upserted from the content pack (plans.yaml) at every start."""

    __tablename__ = "plans"

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(max_length=100)
    requests_per_minute: int | None = Field(default=None, description="null = negotiated per tenant")
    monthly_token_quota: int | None = None
    trial_days: int
    scopes: list[str] = Field(sa_column=Column(JSON, nullable=False))
    models: list[str] = Field(sa_column=Column(JSON, nullable=False))
    features: list[str] = Field(sa_column=Column(JSON, nullable=False))
    updated_at: datetime
    max_keys: int | None = Field(default=None, description="active API keys per tenant; null = no limit")
    # Registration offers it (migration 0018): plans with a list price; a negotiated one is set by a
    # platform administrator with a contract end (docs/billing.md, "Plans").
    self_serve: bool = Field(default=False)


class Tenant(SQLModel, table=True):
    __tablename__ = "tenants"

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(max_length=200, unique=True)
    plan_id: str = Field(foreign_key="plans.id", max_length=40)
    rate_limit_per_minute: int | None = Field(default=None, description="Negotiated override of the plan.")
    trial_ends_at: datetime
    created_at: datetime
    # Members sign in through the tenant's identity provider only (docs/accounts.md, "Single sign-on").
    sso_enforced: bool = Field(default=False)
    # The end of the contract of a negotiated plan (migration 0018); live keys get 402 from then on.
    contract_ends_at: datetime | None = None


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: str = Field(primary_key=True, max_length=40)
    # None: a person of no organisation (they left or were removed); they keep their account and may
    # accept an invitation (migration 0019_members). One organisation per user for now.
    tenant_id: str | None = Field(default=None, foreign_key="tenants.id", max_length=40, index=True)
    email: str = Field(max_length=320, unique=True, description="Stored lower-cased.")
    password_hash: str | None = Field(
        default=None, max_length=200, description="argon2id PHC string; none for passkey or SSO users."
    )
    permissions: list[str] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime
    email_verified_at: datetime | None = None
    # In every admin JWT as "ver"; sign-out and password changes raise it, which ends earlier tokens.
    token_version: int = Field(default=0)
    # owner, admin, developer, viewer or billing (agent_server/accounts/roles.py); None: no rights in
    # the organisation (members made before roles without tenant:admin, SSO users given none).
    role: str | None = Field(default=None, max_length=16)


class ApiKey(SQLModel, table=True):
    """An API key; only the SHA-256 digest of its secret body is stored, never the key."""

    __tablename__ = "api_keys"

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    name: str = Field(max_length=200)
    scopes: list[str] = Field(sa_column=Column(JSON, nullable=False))
    environment: str = Field(max_length=8, description="test (sandbox, mock LLM) or live")
    digest: str = Field(max_length=64, unique=True)
    prefix: str = Field(max_length=16, description="sk_test_ or sk_live_")
    last4: str = Field(max_length=4)
    created_at: datetime
    revoked_at: datetime | None = None
    replaced_by: str | None = Field(default=None, max_length=40, description="The key a rotation issued.")
    # Optional settings (docs/models-and-keys.md); a key without them works as it always did.
    models: list[str] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True)), description="Allow-list: ids and patterns."
    )
    budget_period: str | None = Field(default=None, max_length=8, description="day, month or total")
    budget_tokens: int | None = Field(default=None, sa_column=Column(BigInteger))
    budget_spend: int | None = Field(default=None, sa_column=Column(BigInteger), description="minor units")
    expires_at: datetime | None = None
    key_metadata: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON(none_as_null=True)))
    # The time of the key's newest usage row, set by the usage writer with each batch it writes (so
    # it lags by the writer's interval; migration 0013_key_last_used). Null: never used.
    last_used_at: datetime | None = None
    # Request and response bodies of this key's requests are kept this many days (1-90); null: never
    # (docs/request-log.md, migration 0017_request_log).
    log_bodies_days: int | None = None


class UsageRecord(SQLModel, table=True):
    """One /v1 request, written in batches by the usage writer; also the request log's row.

    The log lists a tenant's rows newest first by (created_at, id), filtered by at most a key, a
    model, a status class or an endpoint: each filter has an index that starts with the tenant and
    ends with that order, so a page is one index range at any table size (docs/request-log.md).
    """

    __tablename__ = "usage_records"
    __table_args__ = (
        Index("ix_usage_records_tenant_time", "tenant_id", "created_at", "id"),
        Index("ix_usage_records_tenant_key_time", "tenant_id", "key_id", "created_at", "id"),
        Index("ix_usage_records_tenant_model_time", "tenant_id", "model", "created_at", "id"),
        Index("ix_usage_records_tenant_endpoint_time", "tenant_id", "endpoint", "created_at", "id"),
        # The status class (2 for 2xx): the expression the log's status filter compares.
        Index("ix_usage_records_tenant_class_time", "tenant_id", text("(status / 100)"), "created_at", "id"),
        Index("ix_usage_records_tenant_request", "tenant_id", "request_id"),
        Index("ux_usage_records_row_token", "row_token", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant_id: str = Field(max_length=40)
    key_id: str = Field(max_length=40)
    model: str = Field(max_length=200)
    endpoint: str = Field(max_length=40)
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    status: int
    backend: str = Field(max_length=100)
    stream: bool
    created_at: datetime
    # Set on rows that went through the Redis usage log: the drain inserts each token once
    # (migration 0006_usage_row_token; index ux_usage_records_row_token).
    row_token: str | None = Field(default=None, max_length=32)
    # The contract that served the request: the pinned API-Version, else the current one (spec 9).
    # Null on rows written before migration 0010_usage_api_version and on playground rows.
    api_version: str | None = Field(default=None, max_length=24)
    # Millionths of a minor unit (tokens x price per million tokens, exact) and its currency; null on
    # rows before migration 0012_keys_spend_byok, 0 / null for sandbox keys and unpriced models.
    cost_micros: int | None = Field(default=None, sa_column=Column(BigInteger))
    currency: str | None = Field(default=None, max_length=3)
    # The request log (migration 0017_request_log); null on rows written before it. ``model`` is the
    # model the client asked for; ``model_served`` the id the answering upstream was sent, and
    # ``upstream`` that backend of the route (``mock`` for the sandbox; a cache hit has none).
    request_id: str | None = Field(default=None, max_length=128)
    model_served: str | None = Field(default=None, max_length=200)
    upstream: str | None = Field(default=None, max_length=100)
    error_code: str | None = Field(default=None, max_length=64)
    ttft_ms: float | None = Field(default=None, description="Streams: admission to the first content.")
    trace_id: str | None = Field(default=None, max_length=40, description="Playground rows: their trace.")


class RequestBody(SQLModel, table=True):
    """The bodies of one logged request, for keys that opted in (``api_keys.log_bodies_days``);
    deleted by the housekeeping job once ``expires_at`` has passed. The row it belongs to carries
    the same ``row_token``. Headers are never stored: they hold the credentials."""

    __tablename__ = "request_bodies"
    __table_args__ = (Index("ix_request_bodies_expires", "expires_at"),)

    row_token: str = Field(primary_key=True, max_length=32)
    tenant_id: str = Field(max_length=40)
    request: str | None = Field(default=None, sa_column=Column(Text))
    response: str | None = Field(default=None, sa_column=Column(Text))
    truncated: bool = Field(default=False, description="A body was longer than the cap and was cut.")
    created_at: datetime
    expires_at: datetime


class ProviderKey(SQLModel, table=True):
    """A tenant's own key for an LLM provider (BYOK), encrypted with the SecretBox; never shown."""

    __tablename__ = "byok_keys"
    __table_args__ = (UniqueConstraint("tenant_id", "provider", name="ux_byok_keys_tenant_provider"),)

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40)
    provider: str = Field(max_length=100)
    secret_encrypted: str = Field(sa_column=Column(Text, nullable=False))
    hint: str = Field(max_length=16, description="The last four characters, for people.")
    version: int = Field(default=1, description="Raised by every replacement: caches compare it.")
    created_at: datetime
    updated_at: datetime
