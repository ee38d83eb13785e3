"""Monthly token quotas: a live key of a tenant that spent its plan's quota gets 402 until the month renews."""

from __future__ import annotations

from sqlalchemy import update

from agent_server.foundation.timeutil import month_bounds
from agent_server.gateway.service import Caller
from agent_server.gateway.tables import Tenant
from tests.gateway.conftest import Harness, HarnessFactory, ScriptedBackend
from tests.gateway.test_chat import assert_envelope

STARTER_QUOTA = 2_000_000  # resources/content/plans.yaml


async def spend(h: Harness, key: str, tokens: int) -> None:
    """Usage rows as the gateway writes them, flushed, then one quota scan."""
    principal = await h.gateway.keys.authenticate(key)
    caller = Caller(principal, {}, 0.0)
    await h.gateway.record(caller, "chat", "gpt-4o-mini", 200, "scripted", prompt_tokens=tokens)
    await h.gateway.usage.flush()
    await h.gateway.quota.scan()


async def test_a_spent_quota_is_402_until_the_next_month(make_harness: HarnessFactory) -> None:
    async with make_harness(mode="production") as h:
        h.gateway.services.llm = ScriptedBackend(["fine"])
        admin = await h.tenant("starter")
        _, key = await h.key(admin)
        other_key = (await h.key(await h.tenant("starter")))[1]
        await spend(h, key, STARTER_QUOTA - 10)
        assert (await h.chat(key)).status_code == 200  # 10 tokens left: still served
        await spend(h, key, 10)
        refused = await h.chat(key)
        assert refused.status_code == 402
        assert_envelope(refused.json(), "quota_exceeded")
        assert refused.json()["error"]["type"] == "insufficient_quota"
        assert "2,000,000" in refused.json()["error"]["message"]
        assert refused.headers["X-RateLimit-Remaining"]  # admitted, so counted and told its limit
        assert (await h.chat(other_key)).status_code == 200  # another tenant is not affected
        assert (
            await h.client.get("/v1/models", headers={"Authorization": f"Bearer {key}"})
        ).status_code == 200
        # The first second of the next month (UTC) serves it again, before any scan.
        _, following = month_bounds(h.clock.now())
        h.clock.advance(following.timestamp() - h.clock.now())
        assert (await h.chat(key)).status_code == 200
        await h.gateway.quota.scan()  # the new month starts from zero
        assert h.gateway.quota.used(admin.id) < 100


async def test_an_upgrade_lifts_the_block_at_the_next_scan(make_harness: HarnessFactory) -> None:
    async with make_harness(mode="production") as h:
        h.gateway.services.llm = ScriptedBackend(["fine"])
        admin = await h.tenant("starter")
        _, key = await h.key(admin)
        await spend(h, key, STARTER_QUOTA)
        assert (await h.chat(key)).status_code == 402
        async with h.gateway.db.session() as session:
            await session.execute(update(Tenant).where(Tenant.id == admin.id).values(plan_id="professional"))
        await h.gateway.quota.scan()
        assert (await h.chat(key)).status_code == 200


async def test_sandbox_keys_are_never_charged(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    _, key = await harness.key(admin)
    assert key.startswith("sk_test_")
    await spend(harness, key, STARTER_QUOTA * 3)
    assert harness.gateway.quota.used(admin.id) == 0
    assert (await harness.chat(key)).status_code == 200
