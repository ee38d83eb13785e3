"""Bring your own key: a tenant's own API key per LLM provider, encrypted at rest with the SecretBox
(like connector secrets) and shown only as a hint.

Models marked BYOK (``byok: true`` in models.yaml or in the upstream settings) are called with the
tenant's key for their provider (``byok_llm.py``); without one the call is 402
``byok_provider_missing``. The key authenticator loads a tenant's keys with each API key it caches
(``credentials``), so the request path reads them from memory; a change here clears that cache in
this process, and other processes see it within the key cache TTL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError, NotFound, PaymentRequired
from agent_server.foundation.secret_box import SecretBox, hint
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway import keys
from agent_server.gateway.tables import ProviderKey, unix
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.gateway")


@dataclass(frozen=True, slots=True)
class ProviderCredential:
    version: int  # raised by every replacement, so cached upstream clients can tell
    secret: str = field(repr=False)


def missing(provider: str, model: str) -> PaymentRequired:
    return PaymentRequired(
        f"The model '{model}' is called with your own {provider} key, and this tenant has none; "
        f"an administrator stores it with PUT /admin/byok/{provider}.",
        param="model",
    )


class ByokVault:
    def __init__(self, db: Database, clock: Clock, settings: Settings, providers: Iterable[str]) -> None:
        self._db, self._clock, self._settings = db, clock, settings
        self.providers = frozenset(providers)
        self._secret_box: SecretBox | None = None

    def _box(self) -> SecretBox:
        """The SecretBox of connector secrets (same key), made on first use."""
        if self._secret_box is None:
            self._secret_box = SecretBox.from_settings(self._settings)
        return self._secret_box

    def credentials(self, rows: Iterable[tuple[str, int, str]]) -> dict[str, ProviderCredential]:
        """(provider, version, ciphertext) rows as credentials; an undecryptable one is left out
        (calls needing it get 402) and logged, never shown."""
        found = {}
        for provider, version, encrypted in rows:
            try:
                found[provider] = ProviderCredential(version, self._box().decrypt(encrypted))
            except AgentError:
                log.error(
                    "the stored %s key of a tenant cannot be decrypted; check AGENTGATE_ENCRYPTION_KEY",
                    provider,
                )
        return found

    def check_provider(self, provider: str) -> None:
        if provider not in self.providers:
            listed = ", ".join(sorted(self.providers)) or "none is configured"
            raise NotFound(
                f"No provider '{provider}' (providers: {listed}).",
                code="provider_not_found",
                param="provider",
            )

    async def put(self, tenant_id: str, provider: str, secret: str) -> ProviderKey:
        """Store or replace the tenant's key for ``provider``."""
        self.check_provider(provider)
        encrypted, now = self._box().encrypt(secret), utc(self._clock.now())
        for last_try in (False, True):
            try:
                async with self._db.session() as session:
                    record = await _find(session, tenant_id, provider)
                    if record is None:
                        record = ProviderKey(
                            id=keys.new_id("byok_"),
                            tenant_id=tenant_id,
                            provider=provider,
                            secret_encrypted=encrypted,
                            hint=hint(secret),
                            created_at=now,
                            updated_at=now,
                        )
                        session.add(record)
                    else:
                        record.secret_encrypted, record.hint = encrypted, hint(secret)
                        record.version, record.updated_at = record.version + 1, now
                return record
            except IntegrityError:  # a concurrent first PUT won: replace its key instead
                if last_try:
                    raise
        raise AssertionError("unreachable")

    async def list(self, tenant_id: str) -> list[ProviderKey]:
        async with self._db.session() as session:
            query = (
                select(ProviderKey).where(ProviderKey.tenant_id == tenant_id).order_by(ProviderKey.provider)
            )  # type: ignore[arg-type]
            return list((await session.execute(query)).scalars().all())

    async def get(self, tenant_id: str, provider: str) -> ProviderKey:
        self.check_provider(provider)
        async with self._db.session() as session:
            record = await _find(session, tenant_id, provider)
        if record is None:
            raise NotFound(f"This tenant has no {provider} key.", code="byok_key_not_found", param="provider")
        return record

    async def delete(self, tenant_id: str, provider: str) -> None:
        self.check_provider(provider)
        async with self._db.session() as session:
            gone = await session.execute(
                delete(ProviderKey).where(
                    ProviderKey.tenant_id == tenant_id, ProviderKey.provider == provider
                )  # type: ignore[arg-type]
            )
        if gone.rowcount == 0:  # type: ignore[attr-defined]
            raise NotFound(f"This tenant has no {provider} key.", code="byok_key_not_found", param="provider")


async def _find(session: Any, tenant_id: str, provider: str) -> ProviderKey | None:
    query = select(ProviderKey).where(ProviderKey.tenant_id == tenant_id, ProviderKey.provider == provider)  # type: ignore[arg-type]
    return (await session.execute(query)).scalars().first()


def view(record: ProviderKey) -> dict[str, Any]:
    return {
        "object": "byok_key",
        "provider": record.provider,
        "hint": record.hint,
        "created_at": int(unix(record.created_at)),
        "updated_at": int(unix(record.updated_at)),
    }
