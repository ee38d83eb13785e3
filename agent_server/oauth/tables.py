"""OAuth tables (migration 0021_oauth): registered clients, authorization codes, token families and
remembered consents. Secrets (client secrets, codes, access and refresh tokens) are stored as
SHA-256 digests only; the values exist in the answers that hand them out."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel


class OAuthClient(SQLModel, table=True):
    """A client registered by RFC 7591 dynamic registration."""

    __tablename__ = "oauth_clients"

    client_id: str = Field(
        primary_key=True, max_length=2000, description="an id, or the URL of a metadata document"
    )
    client_name: str = Field(max_length=200)
    redirect_uris: list[str] = Field(sa_column=Column(JSON, nullable=False))
    token_endpoint_auth_method: str = Field(max_length=32, description="none, client_secret_basic or _post")
    grant_types: list[str] = Field(sa_column=Column(JSON, nullable=False))
    scope: str = Field(max_length=200)
    secret_digest: str | None = Field(default=None, max_length=64)
    created_at: datetime


class OAuthCode(SQLModel, table=True):
    """An authorization code: used once (``used_at`` set by the claim that takes it)."""

    __tablename__ = "oauth_codes"

    digest: str = Field(primary_key=True, max_length=64)
    client_id: str = Field(max_length=2000, index=True)
    user_id: str = Field(max_length=40)
    tenant_id: str = Field(max_length=40)
    redirect_uri: str = Field(max_length=2000)
    scope: str = Field(max_length=200)
    resource: str = Field(max_length=2000)
    code_challenge: str = Field(max_length=128)
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


class OAuthToken(SQLModel, table=True):
    """One access token and its refresh token. A refresh makes the next row of the same family; a
    refresh token used twice revokes the whole family (``revoked_at`` on every row)."""

    __tablename__ = "oauth_tokens"

    id: str = Field(primary_key=True, max_length=40)
    family_id: str = Field(max_length=64, index=True, description="the digest of the code it came from")
    client_id: str = Field(max_length=2000, index=True)
    user_id: str = Field(max_length=40)
    tenant_id: str = Field(max_length=40, index=True)
    scope: str = Field(max_length=200)
    resource: str = Field(max_length=2000)
    access_digest: str = Field(max_length=64, unique=True)
    refresh_digest: str | None = Field(default=None, max_length=64, unique=True)
    access_expires_at: datetime
    refresh_expires_at: datetime | None = None
    created_at: datetime
    rotated_at: datetime | None = None  # its refresh token was used
    revoked_at: datetime | None = None


class OAuthConsent(SQLModel, table=True):
    """A person's remembered consent to a client for their organisation, until revoked."""

    __tablename__ = "oauth_consents"
    __table_args__ = (UniqueConstraint("user_id", "client_id", name="ux_oauth_consents_user_client"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(max_length=40)
    tenant_id: str = Field(max_length=40)
    client_id: str = Field(max_length=2000)
    scope: str = Field(max_length=200)
    created_at: datetime
