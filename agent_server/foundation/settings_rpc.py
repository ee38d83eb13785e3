"""Service credentials of the internal bridge, as configured (``AGENTGATE_INTERNAL_RPC_KEYS``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

# What a credential may do; each bridge method needs one of these (docs/internal-rpc.md).
BRIDGE_SCOPES = frozenset({"tools", "keys:verify", "usage:report", "tenants:read"})


class InternalRpcKey(BaseModel):
    """One calling service: an id it sends, the HMAC secret it signs with, and what it may call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    secret: SecretStr = Field(min_length=32, description="At least 32 characters, random.")
    scopes: frozenset[str] = Field(min_length=1)

    @field_validator("scopes")
    @classmethod
    def _known(cls, scopes: frozenset[str]) -> frozenset[str]:
        unknown = scopes - BRIDGE_SCOPES
        if unknown:
            raise ValueError(f"unknown scopes {sorted(unknown)}; known: {sorted(BRIDGE_SCOPES)}")
        return scopes
