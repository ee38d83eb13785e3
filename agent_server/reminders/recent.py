"""Which tenants' keys pinned which deprecated versions in the last 30 days, read from the usage rows.

The usage table has no index on ``api_version`` (one would nearly double the cost of every usage
insert), so the rows are read by id, as the quota and threshold scans do: each pass reads only the
rows added since the last one. The last 30 days are read whole when the set of deprecated versions
changes and once a day, which also catches a row whose id was handed out before a higher one but
committed after it was read (concurrent writers on PostgreSQL).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select

from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import UsageRecord
from agent_server.storage.db import Database

USAGE = UsageRecord.__table__.c  # type: ignore[attr-defined]
WINDOW_SECONDS = 30 * 86400  # "key holders using the old version": requests of the last 30 days
RESYNC_SECONDS = 86400.0


def _epoch(value: datetime) -> float:
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


class RecentPins:
    def __init__(self, db: Database, window: float = WINDOW_SECONDS, resync: float = RESYNC_SECONDS) -> None:
        self.db, self.window, self.resync = db, window, resync
        self._watermark = 0  # the highest usage row id read
        self._synced = float("-inf")
        # version -> (tenant id, key id) -> when that key last pinned it
        self._last: dict[str, dict[tuple[str, str], float]] = {}

    async def refresh(self, versions: list[str], now: float) -> None:
        """Read the usage rows added since the last call, for ``versions`` (the deprecated ones)."""
        if set(versions) != set(self._last) or now - self._synced >= self.resync:
            self._watermark, self._synced, self._last = 0, now, {version: {} for version in versions}
        since = now - self.window
        if versions:
            await self._read_new_rows(versions, since)
        for seen in self._last.values():  # forget keys that stopped pinning the version
            for pair in [pair for pair, last in seen.items() if last < since]:
                del seen[pair]

    async def _read_new_rows(self, versions: list[str], since: float) -> None:
        async with self.db.session() as session:
            top = await session.scalar(select(func.max(USAGE.id)))
            if not top or top <= self._watermark:
                return
            query = (
                select(USAGE.api_version, USAGE.tenant_id, USAGE.key_id, func.max(USAGE.created_at))
                .where(USAGE.id > self._watermark, USAGE.id <= top)
                .where(USAGE.api_version.in_(versions), USAGE.created_at >= utc(since))
                .group_by(USAGE.api_version, USAGE.tenant_id, USAGE.key_id)
            )
            rows = (await session.execute(query)).all()
        for version, tenant_id, key_id, last in rows:
            seen = self._last[version]
            seen[(tenant_id, key_id)] = max(_epoch(last), seen.get((tenant_id, key_id), since))
        self._watermark = top

    def tenants(self, version: str) -> dict[str, list[str]]:
        """Tenant id -> ids of its keys that pinned ``version`` within the window of the last refresh."""
        tenants: dict[str, list[str]] = {}
        for tenant_id, key_id in self._last.get(version, {}):
            tenants.setdefault(tenant_id, []).append(key_id)
        return tenants
