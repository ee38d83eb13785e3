"""The deprecation reminders of spec 9: in month 6 and in the last month before the sunset, one mail
per admin of each tenant whose keys pinned the old version in the last 30 days; once; never after
the sunset. The mails are read from the outbox (the SMTP worker is not involved)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import select

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.mail.tables import OutboxMail
from agent_server.policies.versions import CURRENT_VERSION, ApiVersion, VersionRegistry
from agent_server.reminders.job import VersionReminders
from agent_server.reminders.recent import RecentPins
from agent_server.reminders.schedule import FINAL, MONTH_6, add_months, due_milestone
from agent_server.reminders.tables import VersionReminder
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.gateway.conftest import Harness, TenantAdmin, chat_body, key_headers

OLD = "2025-11-01"
DEPRECATED_AT = datetime(2026, 8, 31, tzinfo=UTC)
MONTH_6_AT = datetime(2027, 2, 28, tzinfo=UTC)  # six calendar months on, clamped to February's end
SUNSET_AT = datetime(2027, 8, 31, tzinfo=UTC)
FINAL_AT = datetime(2027, 8, 1, tzinfo=UTC)  # 30 days before the sunset
GUIDE = f"{BASE_URL}/docs/versioning"


def registry() -> VersionRegistry:
    old = ApiVersion(
        OLD, "deprecated", deprecated_at=DEPRECATED_AT, sunset_at=SUNSET_AT, successor=CURRENT_VERSION
    )
    return VersionRegistry([ApiVersion(CURRENT_VERSION), old])


class World(Harness):
    reminders: VersionReminders

    def at(self, year: int, month: int, day: int, second: int = 0) -> None:
        target = datetime(year, month, day, tzinfo=UTC).timestamp() + second
        assert target >= self.clock.now()
        self.clock.advance(target - self.clock.now())

    async def named_key(self, admin: TenantAdmin, name: str) -> tuple[str, str]:
        """(full key, redacted form) of a new key called ``name``."""
        body = {"name": name, "scopes": ["chat", "models"]}
        response = await self.client.post("/admin/api-keys", json=body, headers=admin.headers)
        assert response.status_code == 201, response.text
        return response.json()["key"], response.json()["redacted"]

    async def member(self, admin: TenantAdmin, email: str, permissions: list[str]) -> None:
        user = repo.new_user(self.clock.now(), admin.id, email, None, permissions)
        await repo.add_user(self.gateway.db, user)

    async def call(self, key: str, version: str | None) -> None:
        headers = key_headers(key) | ({"API-Version": version} if version else {})
        chat = await self.client.post("/v1/chat/completions", json=chat_body(), headers=headers)
        models = await self.client.get("/v1/models", headers=headers)
        assert chat.status_code == models.status_code == 200, chat.text

    async def tick(self) -> int:
        await self.gateway.usage.flush()
        return await self.reminders.tick()

    async def outbox(self) -> list[tuple[str, str, str]]:
        """(to, subject, decrypted body) of every queued version reminder."""
        query = select(OutboxMail).where(OutboxMail.kind == "version_reminder").order_by(OutboxMail.to_addr)  # type: ignore[arg-type]
        async with self.gateway.db.session() as session:
            rows = (await session.execute(query)).scalars().all()
        box = self.app.state.accounts.box
        return [(row.to_addr, row.subject, box.decrypt(row.body_encrypted or "")) for row in rows]

    async def reminded(self) -> set[tuple[str, str, str]]:
        async with self.gateway.db.session() as session:
            rows = (await session.execute(select(VersionReminder))).scalars().all()
        return {(row.version, row.milestone, row.tenant_id) for row in rows}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def world(
    request: pytest.FixtureRequest, settings: Settings, clock: ManualClock
) -> AsyncIterator[World]:
    database = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    changes = {"mail_worker": False, "database_url": database}
    application = create_app(settings.model_copy(update=changes), clock=clock, versions=registry())
    transport = httpx.ASGITransport(application)
    async with running(application), httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        world = World(application, client, clock)
        state = application.state
        world.reminders = VersionReminders(
            state.services.db, state.versions, state.accounts.box, clock, BASE_URL
        )
        yield world


def test_month_6_is_six_calendar_months() -> None:
    assert add_months(DEPRECATED_AT, 6) == MONTH_6_AT
    assert add_months(datetime(2026, 7, 15, 9, 30, tzinfo=UTC), 6) == datetime(2027, 1, 15, 9, 30, tzinfo=UTC)
    assert add_months(datetime(2027, 8, 31, tzinfo=UTC), 6) == datetime(2028, 2, 29, tzinfo=UTC)  # leap year


def test_the_due_milestone_moves_with_time() -> None:
    old = registry().get(OLD)
    assert old is not None
    moments = [(MONTH_6_AT, -1, None), (MONTH_6_AT, 0, MONTH_6), (FINAL_AT, -1, MONTH_6)]
    moments += [(FINAL_AT, 0, FINAL), (SUNSET_AT, -1, FINAL), (SUNSET_AT, 0, None)]
    for moment, offset, expected in moments:
        due = due_milestone(old, moment.timestamp() + offset)
        assert (due.name if due else None) == expected, (moment, offset)
    assert due_milestone(ApiVersion(CURRENT_VERSION), SUNSET_AT.timestamp()) is None


async def test_reminders_go_to_admins_of_tenants_pinning_the_old_version(world: World) -> None:
    tag = uuid.uuid4().hex[:6]
    pinning = await world.tenant()  # tenant A: two admins, a member; two keys call the old version
    await world.member(pinning, f"second-admin-{tag}@a.example", ["tenant:admin"])
    await world.member(pinning, f"member-{tag}@a.example", [])
    bot_key, bot_redacted = await world.named_key(pinning, "billing-bot")
    ci_key, ci_redacted = await world.named_key(pinning, "ci")
    fresh_key, fresh_redacted = await world.named_key(pinning, "fresh-service")
    current_only = await world.tenant()  # tenant B: calls only the current version
    b_key, _ = await world.named_key(current_only, "b")
    stale = await world.tenant()  # tenant C: called the old version, but more than 30 days before
    c_key, c_redacted = await world.named_key(stale, "c")
    late = await world.tenant()  # tenant E: starts pinning the old version after the final notice
    e_key, _ = await world.named_key(late, "e")

    await world.call(c_key, OLD)  # 15 January 2027: 44 days before month 6
    world.at(2027, 2, 20)
    await world.call(bot_key, OLD)
    await world.call(ci_key, OLD)
    await world.call(fresh_key, None)
    await world.call(b_key, None)
    await world.call(b_key, CURRENT_VERSION)

    world.at(2027, 2, 27, 86399)  # one second before month 6
    assert await world.tick() == 0 and await world.outbox() == []

    world.at(2027, 2, 28)
    assert await world.tick() == 2
    mails = await world.outbox()
    admins = sorted([pinning.email, f"second-admin-{tag}@a.example"])
    assert [to for to, _, _ in mails] == admins  # not the member, not B's or C's admin
    for _, subject, body in mails:
        assert subject == f"API version {OLD} retires on 2027-08-31: move to {CURRENT_VERSION}"
        assert OLD in body and CURRENT_VERSION in body and "2027-08-31" in body and GUIDE in body
        assert f"billing-bot ({bot_redacted})" in body and f"ci ({ci_redacted})" in body
        assert "fresh-service" not in body and fresh_redacted not in body
        assert bot_key not in body and ci_key not in body  # never a whole key
    assert await world.reminded() == {(OLD, MONTH_6, pinning.id)}

    assert await world.tick() == 0  # once only
    assert len(await world.outbox()) == 2

    newcomer = await world.tenant()  # tenant D: starts pinning during month 6, gets the reminder then
    d_key, _ = await world.named_key(newcomer, "d")
    world.at(2027, 2, 28, 3600)
    await world.call(d_key, OLD)
    assert await world.tick() == 1
    assert newcomer.email in [to for to, _, _ in await world.outbox()]

    world.at(2027, 7, 20)
    await world.call(c_key, OLD)
    world.at(2027, 7, 25)
    await world.call(ci_key, OLD)
    world.at(2027, 7, 31, 86399)  # one second before the final month: C is new to month 6
    assert await world.tick() == 1
    assert (await world.reminded()) - {(OLD, MONTH_6, pinning.id), (OLD, MONTH_6, newcomer.id)} == {
        (OLD, MONTH_6, stale.id)
    }
    world.at(2027, 8, 1)  # the final month (FINAL_AT); D last pinned the version five months ago
    assert world.clock.now() == FINAL_AT.timestamp()
    assert await world.tick() == 3
    finals = [(to, body) for to, subject, body in await world.outbox() if subject.startswith("Final notice")]
    assert sorted(to for to, _ in finals) == sorted([*admins, stale.email])
    for to, body in finals:
        assert "final reminder" in body and GUIDE in body
        if to == stale.email:
            assert f"c ({c_redacted})" in body and "billing-bot" not in body  # its own keys only
        else:
            assert f"ci ({ci_redacted})" in body and "billing-bot" not in body  # used in the last 30 days
    assert await world.reminded() == {
        (OLD, MONTH_6, pinning.id),
        (OLD, MONTH_6, newcomer.id),
        (OLD, MONTH_6, stale.id),
        (OLD, FINAL, pinning.id),
        (OLD, FINAL, stale.id),
    }
    assert await world.tick() == 0

    world.at(2027, 8, 20)
    await world.call(e_key, OLD)
    world.at(2027, 8, 31)  # the sunset: the version answers 410 and nobody is reminded any more
    gone = await world.client.get("/v1/models", headers=key_headers(e_key) | {"API-Version": OLD})
    assert gone.status_code == 410
    assert await world.tick() == 0
    assert len(await world.outbox()) == 7


async def test_two_processes_queue_a_reminder_once(world: World) -> None:
    """Two reminder jobs on one database (two app processes): the unique row lets one of them queue."""
    admin = await world.tenant()
    key, _ = await world.named_key(admin, "k")
    world.at(2027, 2, 27)
    await world.call(key, OLD)
    world.at(2027, 3, 1)
    await world.gateway.usage.flush()
    other = VersionReminders(
        world.gateway.db, registry(), world.app.state.accounts.box, world.clock, BASE_URL
    )
    # The first job found the tenant; the other queues its reminder before the first commits.
    now, first = world.clock.now(), world.reminders
    await first.pins.refresh([OLD], now)
    pinning = first.pins.tenants(OLD)
    assert list(pinning) == [admin.id] and len(pinning[admin.id]) == 1
    assert await other.tick() == 1
    version = registry().get(OLD)
    assert version is not None
    assert await first._remind(version, MONTH_6, admin.id, pinning[admin.id], now) == 0  # its insert fails
    assert [to for to, _, _ in await world.outbox()] == [admin.email]
    assert await first.tick() == 0


async def test_a_key_that_stops_pinning_the_version_is_forgotten_after_30_days(world: World) -> None:
    admin = await world.tenant()
    key, _ = await world.named_key(admin, "k")
    await world.call(key, OLD)
    await world.gateway.usage.flush()
    pins = RecentPins(world.gateway.db, resync=float("inf"))  # no daily re-read: the pass only adds rows
    await pins.refresh([OLD], world.clock.now())
    assert list(pins.tenants(OLD)) == [admin.id]
    world.clock.advance(30 * 86400 - 1)
    await pins.refresh([OLD], world.clock.now())
    assert list(pins.tenants(OLD)) == [admin.id]
    world.clock.advance(2)  # no usage row since: the key is forgotten all the same
    await pins.refresh([OLD], world.clock.now())
    assert pins.tenants(OLD) == {}
