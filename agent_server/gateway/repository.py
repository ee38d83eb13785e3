"""Database access for tenants, users and API keys; every read and write of those tables is here.

Every key query names the tenant: a tenant's admin can never reach another tenant's key, and a key
of another tenant looks exactly like a missing one (404, not 403).

A key's ``revoked_at`` is when it stops working: the moment of its revocation, or a moment in the
future when a rotation left it an overlap. It is *live* until then (and until its ``expires_at``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import roles
from agent_server.foundation.errors import Conflict, NotFound, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.timeutil import utc
from agent_server.gateway import keys
from agent_server.gateway.tables import ApiKey, PlanRecord, ProviderKey, Tenant, User, unix
from agent_server.storage.db import Database

# Called with the tenant's count of live keys while no other key of the tenant can be added; raises
# to refuse one more (the plan's limit, key_admin.py).
KeyCap = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class KeyRow:
    """What the authenticator needs about a key, read in one query (key joined with its tenant)."""

    key_id: str
    tenant_id: str
    scopes: list[str]
    environment: str
    revoked: bool  # revoked at or before ``now`` of the lookup
    plan_id: str
    rate_limit_override: int | None
    # The key's optional settings (key_settings.py) and the tenant's own provider keys, encrypted:
    # (provider, version, ciphertext).
    models: list[str] | None = None
    budget_period: str | None = None
    budget_tokens: int | None = None
    budget_spend: int | None = None
    expires_at: datetime | None = None
    provider_keys: tuple[tuple[str, int, str], ...] = ()
    revokes_at: datetime | None = None  # a rotation's overlap: it stops then, with no other event
    log_bodies_days: int | None = None


async def key_by_digest(db: Database, digest: str, now: float) -> KeyRow | None:
    """The key and, in the same session, its tenant's BYOK keys (cached with it by the caller)."""
    query = (
        select(
            ApiKey.id,
            ApiKey.tenant_id,
            ApiKey.scopes,
            ApiKey.environment,
            ApiKey.revoked_at,
            Tenant.plan_id,
            Tenant.rate_limit_per_minute,
            ApiKey.models,
            ApiKey.budget_period,
            ApiKey.budget_tokens,
            ApiKey.budget_spend,
            ApiKey.expires_at,
            ApiKey.log_bodies_days,
        )
        .join(Tenant, Tenant.id == ApiKey.tenant_id)  # type: ignore[arg-type]
        .where(ApiKey.digest == digest)
    )
    async with db.session() as session:
        row = (await session.execute(query)).first()
        if row is None:
            return None
        if row[4] is not None and unix(row[4]) <= now:  # revoked: nothing else of it matters
            return KeyRow(row[0], row[1], list(row[2]), row[3], True, row[5], row[6])
        provider_keys = (
            await session.execute(
                select(ProviderKey.provider, ProviderKey.version, ProviderKey.secret_encrypted).where(
                    ProviderKey.tenant_id == row[1]  # type: ignore[arg-type]
                )
            )
        ).all()
    return KeyRow(
        row[0],
        row[1],
        list(row[2]),
        row[3],
        False,
        row[5],
        row[6],
        list(row[7]) if row[7] is not None else None,
        row[8],
        row[9],
        row[10],
        row[11],
        tuple((p, v, e) for p, v, e in provider_keys),
        row[4],
        row[12],
    )


async def create_tenant(
    db: Database,
    now: float,
    name: str,
    plan_id: str,
    rate_limit: int | None = None,
    contract_ends_at: datetime | None = None,
) -> Tenant:
    async with db.session() as session:
        plan = await session.get(PlanRecord, plan_id)
        if plan is None:
            raise ValidationFailed(f"Unknown plan '{plan_id}'.", param="plan")
        tenant = new_tenant(now, name, plan, rate_limit)
        tenant.contract_ends_at = contract_ends_at
        session.add(tenant)
        await _flush_unique(session, f"A tenant named '{name}' already exists.")
    return tenant


def new_tenant(now: float, name: str, plan: PlanRecord, rate_limit: int | None = None) -> Tenant:
    created = utc(now)
    return Tenant(
        id=new_id("ten_"),
        name=name,
        plan_id=plan.id,
        rate_limit_per_minute=rate_limit,
        trial_ends_at=created + timedelta(days=plan.trial_days),
        created_at=created,
    )


async def find_tenant(db: Database, id_or_name: str) -> Tenant | None:
    async with db.session() as session:
        query = select(Tenant).where(or_(Tenant.id == id_or_name, Tenant.name == id_or_name))
        return (await session.execute(query)).scalars().first()


async def set_rate_limit(db: Database, tenant_id: str, rate_limit: int | None) -> None:
    """The negotiated per-key limit of a tenant (Enterprise); None falls back to the plan."""
    async with db.session() as session:
        await session.execute(
            update(Tenant).where(Tenant.id == tenant_id).values(rate_limit_per_minute=rate_limit)  # type: ignore[arg-type]
        )


def new_user(
    now: float,
    tenant_id: str,
    email: str,
    password_hash: str | None,
    permissions: list[str],
    role: str | None = None,
) -> User:
    """Without ``role``, ``tenant:admin`` among the permissions makes an admin (as before roles)."""
    role = role if role is not None else roles.role_from_permissions(permissions)
    return User(
        id=new_id("usr_"),
        tenant_id=tenant_id,
        email=email.strip().lower(),
        password_hash=password_hash,
        permissions=roles.permissions_with(permissions, role),
        created_at=utc(now),
        role=role,
    )


async def add_user(db: Database, user: User) -> User:
    async with db.session() as session:
        session.add(user)
        await _flush_unique(session, f"A user with the e-mail {user.email} already exists.")
    return user


async def find_user(db: Database, email: str) -> User | None:
    async with db.session() as session:
        query = select(User).where(User.email == email.strip().lower())
        return (await session.execute(query)).scalars().first()


async def set_password_hash(db: Database, user_id: str, password_hash: str) -> None:
    async with db.session() as session:
        await session.execute(update(User).where(User.id == user_id).values(password_hash=password_hash))  # type: ignore[arg-type]


def new_key(
    now: float,
    tenant_id: str,
    name: str,
    scopes: list[str],
    environment: str,
    settings: dict[str, Any] | None = None,
) -> tuple[ApiKey, str]:
    """A key record and the full key, which exists only in this return value and the response.
    ``settings``: optional ``api_keys`` columns (``KeyOptions.columns``)."""
    full, body = keys.generate(environment)
    record = ApiKey(
        id=new_id("key_"),
        tenant_id=tenant_id,
        name=name,
        scopes=sorted(set(scopes)),
        environment=environment,
        digest=keys.digest(body),
        prefix=keys.PREFIX_OF[environment],
        last4=body[-4:],
        created_at=utc(now),
        **(settings or {}),
    )
    return record, full


# The optional settings a rotation copies to the new key (its spend starts afresh, see docs).
CARRIED = (
    "models",
    "budget_period",
    "budget_tokens",
    "budget_spend",
    "expires_at",
    "key_metadata",
    "log_bodies_days",
)


def stop_time(moment: float) -> datetime:
    """``moment`` as a stored ``revoked_at``, never after it (``utc`` rounds to the nearest
    microsecond): a key revoked at ``now`` is refused at ``now``, not half a microsecond later."""
    stamp = utc(moment)
    return stamp - timedelta(microseconds=1) if stamp.timestamp() > moment else stamp


def live(now: datetime) -> ColumnElement[bool]:
    """Keys that work at ``now``: not revoked yet (a rotation's overlap counts) and not expired."""
    return and_(
        or_(ApiKey.revoked_at.is_(None), ApiKey.revoked_at > now),  # type: ignore[union-attr,operator]
        or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > now),  # type: ignore[union-attr,operator]
    )


async def _capped(session: AsyncSession, tenant_id: str, now: datetime, cap: KeyCap | None) -> None:
    """Run ``cap`` on the tenant's live key count, holding off every other writer of the tenant's keys
    until this transaction ends: a no-op update locks the tenant's row (PostgreSQL) or takes the
    database's write lock (SQLite), so two requests cannot both see room for one more key."""
    if cap is None:
        return
    await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(name=Tenant.name))  # type: ignore[arg-type]
    count = select(func.count()).select_from(ApiKey).where(ApiKey.tenant_id == tenant_id, live(now))  # type: ignore[arg-type]
    cap(int(await session.scalar(count) or 0))


async def add_key(db: Database, record: ApiKey, cap: KeyCap | None = None) -> ApiKey:
    async with db.session() as session:
        await insert_key(session, record, cap)
    return record


async def insert_key(session: AsyncSession, record: ApiKey, cap: KeyCap | None = None) -> None:
    """Add ``record`` in the caller's transaction (with what else it writes), under ``cap``."""
    await _capped(session, record.tenant_id, record.created_at, cap)
    session.add(record)


async def list_keys(db: Database, tenant_id: str) -> list[ApiKey]:
    async with db.session() as session:
        query = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at, ApiKey.id)  # type: ignore[arg-type]
        return list((await session.execute(query)).scalars().all())


async def find_key(db: Database, tenant_id: str, key_id: str) -> ApiKey:
    async with db.session() as session:
        return await _tenant_key(session, tenant_id, key_id)


async def update_key(db: Database, tenant_id: str, key_id: str, values: dict[str, Any]) -> ApiKey:
    """Change an active key's columns; a revoked key cannot change (404, like rotating it)."""
    async with db.session() as session:
        record = await _tenant_key(session, tenant_id, key_id)
        if record.revoked_at is not None:
            raise NotFound(f"No active API key {key_id}; it was revoked or rotated.", param="key_id")
        for name, value in values.items():
            setattr(record, name, value)
    return record


async def revoke_key(db: Database, now: float, tenant_id: str, key_id: str) -> ApiKey:
    """Revoke at once, a key in a rotation's overlap too; revoking a revoked key returns it unchanged
    (irreversible, idempotent)."""
    async with db.session() as session:
        record = await _tenant_key(session, tenant_id, key_id)
        if record.revoked_at is None or unix(record.revoked_at) > now:
            record.revoked_at = stop_time(now)
    return record


async def rotate_key(
    db: Database,
    now: float,
    tenant_id: str,
    key_id: str,
    *,
    overlap: float = 0,
    cap: KeyCap | None = None,
) -> tuple[ApiKey, ApiKey, str]:
    """(old, new, full new key): the new key has the old one's name, scopes and settings; the old one
    stops ``overlap`` seconds from ``now`` (at once by default). ``cap`` sees the live keys before
    the new one (with an overlap both keys are live for a while).

    One transaction, and the old key is revoked by a conditional UPDATE, so two concurrent rotations
    of one key cannot both succeed and leave two live successors.
    """
    async with db.session() as session:
        old = await _tenant_key(session, tenant_id, key_id)
        if old.revoked_at is not None:
            raise NotFound(f"No active API key {key_id}; it was revoked or rotated.", param="key_id")
        await _capped(session, tenant_id, utc(now), cap)
        carried = {name: getattr(old, name) for name in CARRIED}
        new, full = new_key(now, tenant_id, old.name, list(old.scopes), old.environment, carried)
        session.add(new)
        await session.flush()
        revoked = await session.execute(
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))  # type: ignore[union-attr,arg-type]
            .values(revoked_at=stop_time(now + overlap), replaced_by=new.id)
        )
        if revoked.rowcount != 1:  # type: ignore[attr-defined]
            raise NotFound(f"No active API key {key_id}; it was revoked or rotated.", param="key_id")
        await session.refresh(old)
    return old, new, full


async def _tenant_key(session: AsyncSession, tenant_id: str, key_id: str) -> ApiKey:
    record = await session.get(ApiKey, key_id)
    if record is None or record.tenant_id != tenant_id:
        raise NotFound(f"No API key {key_id}.", param="key_id")
    return record


async def _flush_unique(session: AsyncSession, message: str) -> None:
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict(message) from None
