"""The passkeys table (migration 0009_passkeys): WebAuthn credentials, several per user.

Only public material is stored: the credential's public key (COSE), its id and its sign counter.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, LargeBinary
from sqlmodel import Field, Relationship, SQLModel

from agent_server.gateway.tables import User

# WebAuthn credential ids have at most 1023 bytes: 1364 base64url characters.
MAX_CREDENTIAL_ID_CHARS = 1400
MAX_NAME_CHARS = 100


class PasskeyCredential(SQLModel, table=True):
    __tablename__ = "passkeys"

    id: str = Field(primary_key=True, max_length=40, description="pk_…")
    user_id: str = Field(foreign_key="users.id", max_length=40, index=True)
    credential_id: str = Field(max_length=MAX_CREDENTIAL_ID_CHARS, unique=True, description="base64url")
    public_key: bytes = Field(sa_column=Column(LargeBinary, nullable=False), description="COSE key")
    sign_count: int = Field(default=0, description="The authenticator's counter at the last sign-in.")
    # The user.id of the creation options; discoverable sign-ins return it and must match.
    user_handle: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    transports: list[str] = Field(sa_column=Column(JSON, nullable=False))
    aaguid: str = Field(max_length=36, description="The authenticator model; zeros when not attested.")
    backed_up: bool = Field(default=False, description="Synced to a passkey provider (BS flag).")
    name: str = Field(max_length=MAX_NAME_CHARS)
    created_at: datetime
    last_used_at: datetime | None = None
    # Never loaded (``raise``): it only tells the unit of work to insert a new user before the
    # passkey that ``Passkeys.store`` adds in the same transaction.
    user: User = Relationship(sa_relationship_kwargs={"lazy": "raise"})
