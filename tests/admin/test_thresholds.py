"""usage.threshold_reached fires once per tenant, threshold and month, computed from the usage rows."""

from __future__ import annotations

from datetime import timedelta

from agent_server.gateway.tables import UsageRecord
from agent_server.webhooks.repository import utc
from tests.admin.conftest import Receiver, World

QUOTA = 20_000_000  # the professional plan's monthly token quota


async def use(world: World, tokens: int) -> None:
    async with world.app.state.services.db.session() as session:
        session.add(
            UsageRecord(
                tenant_id=world.tenants["a"],
                key_id="key_x",
                model="agentgate-mock-small",
                endpoint="chat",
                prompt_tokens=tokens,
                completion_tokens=0,
                latency_ms=1.0,
                status=200,
                backend="mock",
                stream=False,
                created_at=utc(world.clock.now()),
            )
        )


async def test_thresholds_fire_once_per_month(world: World, receiver: Receiver) -> None:
    auth = world.auth("a_admin")
    body = {"url": receiver.url, "events": ["usage.threshold_reached"]}
    assert (await world.client.post("/admin/webhooks", json=body, headers=auth)).status_code == 201
    assert (await world.client.get("/admin/usage/thresholds", headers=auth)).json()["percents"] == [80, 100]
    assert (
        await world.client.put("/admin/usage/thresholds", json={"percents": [100, 50]}, headers=auth)
    ).json() == {"percents": [50, 100]}
    bad = await world.client.put("/admin/usage/thresholds", json={"percents": [0]}, headers=auth)
    assert bad.status_code == 400

    monitor = world.admin.thresholds
    await use(world, QUOTA * 40 // 100)
    assert await monitor.scan() == 0
    await use(world, QUOTA * 15 // 100)  # 55 %
    assert await monitor.scan() == 1
    await use(world, 1)
    assert await monitor.scan() == 0  # 50 % was announced already this month
    await use(world, QUOTA // 2)  # 105 %
    assert await monitor.scan() == 1

    await world.admin.worker.tick()
    payloads = sorted((r.json() for r in receiver.requests), key=lambda p: p["data"]["percent"])
    assert [p["data"]["percent"] for p in payloads] == [50, 100]  # sent concurrently: any order
    assert payloads[0]["type"] == "usage.threshold_reached" and payloads[0]["data"]["monthly_quota"] == QUOTA
    assert payloads[0]["data"]["month"] == utc(world.clock.now()).strftime("%Y-%m")

    # A new month starts from zero and may announce again.
    now = utc(world.clock.now())
    next_month = (now.replace(day=28) + timedelta(days=5)).replace(day=1, hour=0, minute=0, second=1)
    world.clock.advance((next_month - now).total_seconds())
    await use(world, QUOTA * 60 // 100)
    assert await monitor.scan() == 1
