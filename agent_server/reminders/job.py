"""The deprecation reminder job (spec 9): month 6 and the final month of every deprecated version.

Each pass finds, for every deprecated version with a reminder due, the tenants whose keys sent that
``API-Version`` in the last 30 days (the usage rows record it; ``RecentPins``) and queues one mail
per admin of each tenant not yet reminded of that milestone. The ``version_reminders`` row and the
mails are one transaction: its primary key lets one process queue a tenant's reminder, and only
once, however many processes run the job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from agent_server.foundation.clock import Clock
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.tasks import stop_tasks
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import ApiKey, Tenant, User
from agent_server.mail.outbox import enqueue
from agent_server.policies.versions import POLICY_PATH, ApiVersion, VersionRegistry
from agent_server.reminders.mail import KeyUse, reminder_mail
from agent_server.reminders.recent import RecentPins
from agent_server.reminders.schedule import due_milestone
from agent_server.reminders.tables import VersionReminder
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.reminders")
TENANT_ADMIN = "tenant:admin"
EVERY_SECONDS = 3600.0


class VersionReminders:
    def __init__(
        self, db: Database, versions: VersionRegistry, box: SecretBox, clock: Clock, public_base_url: str
    ) -> None:
        self.db, self.versions, self.box, self.clock = db, versions, box, clock
        self.guide_url = public_base_url.rstrip("/") + POLICY_PATH
        self.pins = RecentPins(db)

    async def tick(self) -> int:
        """One pass over every deprecated version; returns how many mails it queued."""
        now, queued = self.clock.now(), 0
        deprecated = [version for version in self.versions.versions if version.state(now) == "deprecated"]
        await self.pins.refresh([version.name for version in deprecated], now)
        for version in deprecated:
            milestone = due_milestone(version, now)
            if milestone is None:
                continue
            pinning = self.pins.tenants(version.name)
            reminded = await self._reminded(version.name, milestone.name) if pinning else set()
            for tenant_id, key_ids in pinning.items():
                if tenant_id not in reminded:
                    queued += await self._remind(version, milestone.name, tenant_id, key_ids, now)
        if queued:
            log.info("queued %d API version reminder mails", queued)
        return queued

    async def _reminded(self, version: str, milestone: str) -> set[str]:
        """Tenants already reminded of ``milestone`` (by any process)."""
        query = select(VersionReminder.tenant_id).where(
            VersionReminder.version == version, VersionReminder.milestone == milestone
        )
        async with self.db.session() as session:
            return set((await session.execute(query)).scalars())

    async def _remind(
        self, version: ApiVersion, milestone: str, tenant_id: str, key_ids: list[str], now: float
    ) -> int:
        """Queue the reminder of one tenant (one mail per admin); 0 if another process already did."""
        try:
            async with self.db.session() as session:
                tenant = await session.get(Tenant, tenant_id)
                users = (await session.execute(select(User).where(User.tenant_id == tenant_id))).scalars()
                admins = [user for user in users if TENANT_ADMIN in user.permissions]
                if tenant is None or not admins:
                    return 0  # no row: an admin added later still gets this reminder
                keys = await session.execute(
                    select(ApiKey).where(ApiKey.id.in_(key_ids)).order_by(ApiKey.name)  # type: ignore[attr-defined]
                )
                used = [
                    KeyUse(key.name, f"{key.prefix}…{key.last4}", key.revoked_at is not None)
                    for key in keys.scalars()
                ]
                session.add(
                    VersionReminder(
                        version=version.name, milestone=milestone, tenant_id=tenant_id, sent_at=utc(now)
                    )
                )
                for admin in admins:
                    mail = reminder_mail(admin.email, milestone, version, tenant.name, used, self.guide_url)
                    enqueue(session, self.box, mail, now)
        except IntegrityError:
            log.debug(
                "reminder %s/%s of %s was queued by another process", version.name, milestone, tenant_id
            )
            return 0
        return len(admins)

    async def run(self, every: float = EVERY_SECONDS) -> None:
        """A pass at once, then every ``every`` seconds; a failing pass (database down) waits for the next."""
        while True:
            try:
                await self.tick()
            except Exception as exc:
                log.warning(
                    "API version reminder pass failed (%s); retrying in %.0f s", type(exc).__name__, every
                )
            await asyncio.sleep(every)

    @asynccontextmanager
    async def running(self, every: float = EVERY_SECONDS) -> AsyncIterator[VersionReminders]:
        """The job as a background task for the app's lifespan."""
        task = asyncio.create_task(self.run(every), name="version-reminders")
        try:
            yield self
        finally:
            await stop_tasks([task])
