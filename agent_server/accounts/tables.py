"""Account tables (migration 0007_accounts): pending registrations, one-time e-mail links, SSO;
invitations to an organisation (migration 0019_members).

Only digests of one-time tokens are stored; the token itself exists in the mail and nowhere else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel


class Registration(SQLModel, table=True):
    """A registration waiting for its e-mail link; the tenant and user are created when it is followed.

    Keeping the pending state here (not as half-made tenants and users) means an unverified
    registration can never hold an organisation name or an e-mail address another person needs.
    """

    __tablename__ = "registrations"

    id: str = Field(primary_key=True, max_length=40)
    email: str = Field(max_length=320, index=True, description="Stored lower-cased.")
    organisation: str = Field(max_length=200)
    plan_id: str = Field(max_length=40)
    method: str = Field(max_length=16, description="password or passkey")
    password_hash: str | None = Field(default=None, max_length=200)
    # The WebAuthn credential created at registration (method passkey), kept until the link is followed.
    passkey: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    token_digest: str | None = Field(
        default=None, max_length=64, unique=True, description="None when no link was sent (known e-mail)."
    )
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


class EmailToken(SQLModel, table=True):
    """A one-time link for an existing user: password reset or invitation (set a first password)."""

    __tablename__ = "email_tokens"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40, index=True)
    purpose: str = Field(max_length=20, description="password_reset or invite")
    digest: str = Field(max_length=64, unique=True)
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


class SsoConnection(SQLModel, table=True):
    """A tenant's identity provider: OIDC (issuer, client) or SAML (IdP metadata). One per protocol."""

    __tablename__ = "sso_connections"
    __table_args__ = (UniqueConstraint("tenant_id", "protocol", name="ux_sso_connections_tenant_protocol"),)

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    protocol: str = Field(max_length=8, description="oidc or saml")
    enabled: bool = True
    # Non-secret settings: OIDC {issuer, client_id, scopes}; SAML {idp_metadata_xml, idp_entity_id}.
    config: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    secret: str | None = Field(default=None, description="Fernet-encrypted OIDC client secret.")
    created_at: datetime
    updated_at: datetime


class TenantDomain(SQLModel, table=True):
    """A tenant's claim of an e-mail domain; once verified (DNS TXT), SSO users of it join that tenant.

    Claims of one domain by several tenants coexist, each with its own row (migration 0019); at most
    one of them is verified (a unique index over the verified rows), and that tenant holds the domain.
    """

    __tablename__ = "tenant_domains"
    __table_args__ = (
        Index(
            "ux_tenant_domains_verified",
            "domain",
            unique=True,
            sqlite_where=text("verified_at IS NOT NULL"),
            postgresql_where=text("verified_at IS NOT NULL"),
        ),
    )

    domain: str = Field(primary_key=True, max_length=253, description="Lower-case, no trailing dot.")
    tenant_id: str = Field(primary_key=True, foreign_key="tenants.id", max_length=40, index=True)
    verification_token: str = Field(max_length=64)
    created_at: datetime
    verified_at: datetime | None = None


class Invitation(SQLModel, table=True):
    """An invitation to join an organisation with a role, by a one-time link mailed to ``email``.

    Pending while neither accepted nor revoked and not expired. Resending replaces the digest (the
    earlier link stops working) and the expiry.
    """

    __tablename__ = "invitations"

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    email: str = Field(max_length=320, index=True, description="Stored lower-cased.")
    role: str = Field(max_length=16)
    invited_by: str = Field(foreign_key="users.id", max_length=40)
    digest: str = Field(max_length=64, unique=True, description="SHA-256 of the link's token.")
    created_at: datetime
    sent_at: datetime
    sends: int = Field(default=1, description="How many times the link was mailed (resends count).")
    expires_at: datetime
    accepted_at: datetime | None = None
    accepted_by: str | None = Field(default=None, foreign_key="users.id", max_length=40)
    revoked_at: datetime | None = None
