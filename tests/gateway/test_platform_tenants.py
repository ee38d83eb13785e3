"""GET /admin/platform/tenants for the platform's tenant list: searched by a part of the name (any
case) or the start of the id, filtered by plan, each tenant with its standing (the one the gateway
enforces: trial, trial ended, by contract...)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.gateway.conftest import Harness, TenantAdmin

DAY = 86_400


async def tenants(h: Harness, admin: TenantAdmin, **params: Any) -> tuple[int, dict[str, dict[str, Any]]]:
    answer = await h.client.get("/admin/platform/tenants", params=params, headers=admin.headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return body["total"], {tenant["name"]: tenant for tenant in body["data"]}


async def create(h: Harness, admin: TenantAdmin, name: str, plan_id: str) -> dict[str, Any]:
    body = {"name": name, "plan_id": plan_id}
    answer = await h.client.post("/admin/platform/tenants", json=body, headers=admin.headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


async def test_tenants_are_searched_filtered_and_shown_with_their_standing(harness: Harness) -> None:
    h = harness
    platform = await h.tenant("enterprise", permissions=("platform:admin", "tenant:admin"))
    old = await create(h, platform, "Old Starter Ltd", "starter")
    h.clock.advance(15 * DAY)  # its 14-day trial is over, with no subscription
    platform.token = await h.login(platform.email)
    contract_end = datetime.fromtimestamp(h.clock.now() + 365 * DAY, UTC).isoformat()
    signed = await h.client.patch(
        f"/admin/platform/tenants/{platform.id}",
        json={"contract_ends_at": contract_end},
        headers=platform.headers,
    )
    assert signed.status_code == 200, signed.text  # the negotiated plan's contract runs a year
    lovelace = await create(h, platform, "Lovelace Labs", "professional")
    await create(h, platform, "Babbage 100% Engines", "starter")

    total, every = await tenants(h, platform)
    assert total == len(every) >= 4
    assert every["Old Starter Ltd"]["standing"]["state"] == "trial_ended"
    assert every["Old Starter Ltd"]["standing"]["code"] == "trial_ended"
    assert every["Lovelace Labs"]["standing"]["state"] == "trial"
    assert every["Lovelace Labs"]["standing"]["trial_ends_at"] == every["Lovelace Labs"]["trial_ends_at"]
    enterprise = next(t for t in every.values() if t["plan_id"] == "enterprise")
    assert enterprise["standing"]["state"] == "contract"  # within its contract: not refused

    assert await tenants(h, platform, q="lovelace") == (1, {"Lovelace Labs": every["Lovelace Labs"]})
    assert (await tenants(h, platform, q=lovelace["id"][:8]))[1].keys() >= {"Lovelace Labs"}  # the id's start
    assert (await tenants(h, platform, q=lovelace["id"]))[1].keys() == {"Lovelace Labs"}
    assert (await tenants(h, platform, q="100%"))[1].keys() == {"Babbage 100% Engines"}  # % is a character
    assert (await tenants(h, platform, q="%"))[1].keys() == {"Babbage 100% Engines"}
    starters = await tenants(h, platform, plan_id="starter")
    assert starters[0] == 2 and set(starters[1]) == {"Old Starter Ltd", "Babbage 100% Engines"}
    assert (await tenants(h, platform, q="ltd", plan_id="starter"))[1].keys() == {"Old Starter Ltd"}
    assert await tenants(h, platform, q="nobody by this name") == (0, {})
    assert old["id"] in {t["id"] for t in every.values()}


async def test_the_search_is_bounded_and_for_platform_admins_only(harness: Harness) -> None:
    platform = await harness.tenant("enterprise", permissions=("platform:admin", "tenant:admin"))
    long = await harness.client.get(
        "/admin/platform/tenants", params={"q": "x" * 201}, headers=platform.headers
    )
    assert long.status_code == 400 and long.json()["error"]["param"] == "q"
    empty_plan = await harness.client.get("/admin/platform/tenants?plan_id=", headers=platform.headers)
    assert empty_plan.status_code == 400 and empty_plan.json()["error"]["param"] == "plan_id"
    tenant_admin = await harness.tenant()
    refused = await harness.client.get(
        "/admin/platform/tenants", params={"q": "a"}, headers=tenant_admin.headers
    )
    assert refused.status_code == 403
