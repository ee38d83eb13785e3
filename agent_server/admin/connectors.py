"""Tenant-scoped connectors: one generic implementation, two kinds described by data.

A connector kind has a configuration (non-secret settings validated by a model of its own, plus
one write-only secret field) and per-user credentials: *bindings* for the office suite, *keys*
for the search provider. Secrets are stored encrypted (foundation/secret_box.py) and never returned,
except once, in the response that created or rotated them.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError
from sqlalchemy import delete, func, select

from agent_server.admin.tables import ConnectorBindingRecord, ConnectorRecord
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError, Conflict, NotFound, ValidationFailed
from agent_server.foundation.secret_box import SecretBox, hint
from agent_server.gateway.tables import User
from agent_server.storage.db import Database
from agent_server.webhooks.repository import iso, new_id, utc


class OfficeSuiteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant_domain: str | None = Field(default=None, max_length=253)
    client_id: str | None = Field(default=None, max_length=200)
    scopes: list[str] = Field(default_factory=list, max_length=50)
    enabled: StrictBool = True


class SearchProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    market: str | None = Field(default=None, max_length=20)
    safe_search: str = Field(default="moderate", pattern="^(off|moderate|strict)$")
    results_per_query: int = Field(default=10, ge=1, le=50)
    enabled: StrictBool = True


@dataclass(frozen=True)
class ConnectorKind:
    name: str
    credential: str  # what a per-user credential is called in paths and responses
    secret_field: str  # the write-only field of the configuration
    settings_model: type[BaseModel]
    rotate_creates: bool  # rotate issues a first credential when the user has none


KINDS = {
    kind.name: kind
    for kind in (
        ConnectorKind("office_suite", "bindings", "client_secret", OfficeSuiteSettings, False),
        ConnectorKind("search_provider", "keys", "api_key", SearchProviderSettings, True),
    )
}


def _new_credential(kind: ConnectorKind) -> str:
    return f"{kind.name[:3]}_" + secrets.token_urlsafe(32)


class Connectors:
    def __init__(self, db: Database, box: SecretBox, clock: Clock) -> None:
        self.db, self.box, self.clock = db, box, clock

    def _now(self) -> datetime:
        return utc(self.clock.now())

    async def _config(self, tenant_id: str, kind: ConnectorKind) -> ConnectorRecord | None:
        async with self.db.session() as session:
            query = select(ConnectorRecord).where(
                ConnectorRecord.tenant_id == tenant_id, ConnectorRecord.kind == kind.name
            )
            return (await session.execute(query)).scalar_one_or_none()

    def _view(self, kind: ConnectorKind, record: ConnectorRecord) -> dict[str, Any]:
        return {
            "kind": kind.name,
            "managed": record.managed,
            "enabled": record.enabled,
            "settings": record.settings,
            f"{kind.secret_field}_set": record.secret_encrypted is not None,
            "created_at": iso(record.created_at),
            "updated_at": iso(record.updated_at),
        }

    async def managed_status(self, tenant_id: str, kind: ConnectorKind) -> dict[str, Any]:
        record = await self._config(tenant_id, kind)
        async with self.db.session() as session:
            count = await session.scalar(
                select(func.count())
                .select_from(ConnectorBindingRecord)
                .where(
                    ConnectorBindingRecord.tenant_id == tenant_id, ConnectorBindingRecord.kind == kind.name
                )
            )
        return {
            "kind": kind.name,
            "configured": record is not None,
            "managed": bool(record and record.managed),
            "enabled": bool(record and record.enabled),
            kind.credential: count or 0,
        }

    async def auto_provision(self, tenant_id: str, kind: ConnectorKind) -> tuple[dict[str, Any], bool]:
        """Create a platform-managed configuration; idempotent. Returns (view, created)."""
        existing = await self._config(tenant_id, kind)
        if existing is not None:
            return self._view(kind, existing), False
        now = self._now()
        record = ConnectorRecord(
            id=new_id("con_"),
            tenant_id=tenant_id,
            kind=kind.name,
            managed=True,
            settings=kind.settings_model().model_dump(),
            secret_encrypted=self.box.encrypt(_new_credential(kind)),
            created_at=now,
            updated_at=now,
        )
        async with self.db.session() as session:
            session.add(record)
        return self._view(kind, record), True

    async def get(self, tenant_id: str, kind: ConnectorKind) -> dict[str, Any]:
        record = await self._config(tenant_id, kind)
        if record is None:
            raise NotFound(f"The {kind.name} connector is not configured.")
        return self._view(kind, record)

    async def patch(self, tenant_id: str, kind: ConnectorKind, changes: dict[str, Any]) -> dict[str, Any]:
        """Merge ``changes`` into the settings; the secret field is encrypted and write-only."""
        changes = dict(changes)
        secret = changes.pop(kind.secret_field, None)
        if secret is not None and (not isinstance(secret, str) or not 8 <= len(secret) <= 4096):
            raise ValidationFailed(f"{kind.secret_field} must be a string of 8 to 4096 characters.")
        record = await self._config(tenant_id, kind)
        now = self._now()
        current = record.settings if record else {}
        try:
            merged = kind.settings_model.model_validate({**current, **changes}).model_dump()
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "body"
            raise ValidationFailed(f"Invalid field '{field}': {first['msg']}.", param=field) from None
        async with self.db.session() as session:
            if record is None:
                record = ConnectorRecord(
                    id=new_id("con_"), tenant_id=tenant_id, kind=kind.name, created_at=now, updated_at=now
                )
            record = await session.merge(record)
            record.settings, record.enabled, record.updated_at = merged, merged["enabled"], now
            record.managed = False if secret is not None else record.managed
            if secret is not None:
                record.secret_encrypted = self.box.encrypt(secret)
        return self._view(kind, record)

    async def delete(self, tenant_id: str, kind: ConnectorKind) -> None:
        await self.get(tenant_id, kind)
        async with self.db.session() as session:
            for table in (ConnectorBindingRecord, ConnectorRecord):
                await session.execute(
                    delete(table).where(table.tenant_id == tenant_id, table.kind == kind.name)
                )

    def _binding_view(self, record: ConnectorBindingRecord) -> dict[str, Any]:
        return {
            "user_id": record.user_id,
            "label": record.label,
            "secret_hint": record.secret_hint,
            "created_at": iso(record.created_at),
            "rotated_at": iso(record.rotated_at),
        }

    async def credentials(self, tenant_id: str, kind: ConnectorKind) -> list[dict[str, Any]]:
        async with self.db.session() as session:
            query = (
                select(ConnectorBindingRecord)
                .where(
                    ConnectorBindingRecord.tenant_id == tenant_id, ConnectorBindingRecord.kind == kind.name
                )
                .order_by(ConnectorBindingRecord.user_id)
            )
            return [self._binding_view(r) for r in (await session.execute(query)).scalars()]

    async def _binding(
        self, tenant_id: str, kind: ConnectorKind, user_id: str
    ) -> ConnectorBindingRecord | None:
        async with self.db.session() as session:
            query = select(ConnectorBindingRecord).where(
                ConnectorBindingRecord.tenant_id == tenant_id,
                ConnectorBindingRecord.kind == kind.name,
                ConnectorBindingRecord.user_id == user_id,
            )
            return (await session.execute(query)).scalar_one_or_none()

    async def issue(
        self, tenant_id: str, kind: ConnectorKind, user_id: str, label: str = "", *, rotate: bool = False
    ) -> dict[str, Any]:
        """Create (or, with ``rotate``, replace) a user's credential; the response shows it once."""
        if await self._config(tenant_id, kind) is None:
            raise NotFound(f"The {kind.name} connector is not configured.")
        async with self.db.session() as session:
            user = await session.get(User, user_id)
        if user is None or user.tenant_id != tenant_id:  # another tenant's user looks missing
            raise NotFound(f"No user {user_id} in this tenant.", param="userId")
        existing = await self._binding(tenant_id, kind, user_id)
        if rotate and existing is None and not kind.rotate_creates:
            raise NotFound(f"No {kind.name} binding for user {user_id}.", param="userId")
        if not rotate and existing is not None:
            raise Conflict(f"User {user_id} already has a {kind.name} binding; rotate it instead.")
        secret = _new_credential(kind)
        now = self._now()
        async with self.db.session() as session:
            record = existing or ConnectorBindingRecord(
                id=new_id("bnd_"), tenant_id=tenant_id, kind=kind.name, user_id=user_id, created_at=now
            )
            record = await session.merge(record)
            record.label = label or record.label or ""
            record.secret_encrypted, record.secret_hint = self.box.encrypt(secret), hint(secret)
            record.rotated_at = now if existing is not None else None
        return {**self._binding_view(record), "secret": secret}

    async def revoke(self, tenant_id: str, kind: ConnectorKind, user_id: str) -> None:
        if await self._binding(tenant_id, kind, user_id) is None:
            raise NotFound(f"No {kind.name} credential for user {user_id}.", param="userId")
        async with self.db.session() as session:
            await session.execute(
                delete(ConnectorBindingRecord).where(
                    ConnectorBindingRecord.tenant_id == tenant_id,
                    ConnectorBindingRecord.kind == kind.name,
                    ConnectorBindingRecord.user_id == user_id,
                )
            )

    async def health(self, tenant_id: str) -> list[dict[str, Any]]:
        """Per kind: configured, enabled, and whether the stored secrets still decrypt (no network)."""
        report = []
        for kind in KINDS.values():
            record = await self._config(tenant_id, kind)
            status = "not_configured" if record is None else "ok" if record.enabled else "disabled"
            if record is not None and record.secret_encrypted is not None:
                try:
                    self.box.decrypt(record.secret_encrypted)
                except AgentError:
                    status = "secret_unreadable"
            report.append({"kind": kind.name, "status": status, "configured": record is not None})
        return report
