"""``POST /<segment>/subscription``: plan change with proration, cancel at period end, resume, with each provider."""

from __future__ import annotations

from typing import Any

import pytest

from agent_server.billing.provider_objects import plan_id_of
from tests.admin.conftest import USERS
from tests.billing.conftest import Billed
from tests.billing.events_support import account, actions, end_trial, plan_of
from tests.billing.test_usage_billing import items_at_provider


async def subscribe(billed: Billed, plan_id: str = "starter", who: str = "a_admin") -> dict[str, Any]:
    """Subscribed and paid at once: the trial is over (within it the first charge waits for its end)."""
    await end_trial(billed, billed.tenants[USERS[who][0]])
    checkout = (await billed.post("create-checkout", {"plan_id": plan_id}, who=who)).json()
    await billed.pay(checkout)
    exchanged = await billed.post("exchange-redirect", {"session_ref": checkout["session_ref"]}, who=who)
    assert exchanged.status_code == 200, exchanged.text
    await billed.relay()
    return exchanged.json()["subscription"]


async def held_plan(billed: Billed, subscription_id: str) -> tuple[str | None, bool]:
    """(plan id, cancel_at_period_end) of the subscription as the provider holds it."""
    if billed.stripe is not None:
        held = billed.stripe.get(f"/v1/subscriptions/{subscription_id}").json()
    else:
        held = await billed.app.state.billing.provider.store.get("subscription", subscription_id)
    return plan_id_of(held), held["cancel_at_period_end"]  # the plan its item is billed at


async def test_a_plan_change_is_prorated_and_applies_to_the_tenant_at_once(billed: Billed) -> None:
    tenant = billed.tenants["a"]
    started = await subscribe(billed, "starter")
    found = await account(billed, tenant)
    assert found is not None and found.customer_id
    before = await items_at_provider(billed, found.customer_id)

    changed = await billed.post("subscription", {"action": "change", "plan_id": "professional"})
    assert changed.status_code == 200, changed.text
    view = changed.json()
    assert view["object"] == "subscription" and view["id"] == started["id"]
    assert view["plan_id"] == "professional" and view["status"] == "active"
    assert await plan_of(billed, tenant) == "professional"
    assert (await held_plan(billed, started["id"]))[0] == "professional"
    prorations = [i for i in await items_at_provider(billed, found.customer_id) if i not in before]
    assert any(item["amount"] < 0 for item in prorations)  # the unused time on the old plan, credited
    await billed.relay()  # the provider's update event agrees with what was written
    assert (await billed.get("status")).json()["plan"]["id"] == "professional"

    back = await billed.post("subscription", {"action": "change", "plan_id": "starter", "prorate": False})
    assert back.status_code == 200 and await plan_of(billed, tenant) == "starter"
    after = await items_at_provider(billed, found.customer_id)
    if billed.stripe is None:  # localstripe credits the unused time on every change, asked or not
        assert len(after) == len(before) + len(prorations)  # no proration asked, none made
    assert (await actions(billed, tenant, "billing.subscription.")) == ["billing.subscription.change"] * 2


async def test_cancel_at_period_end_and_resume(billed: Billed) -> None:
    started = await subscribe(billed, "starter")
    canceled = await billed.post("subscription", {"action": "cancel"})
    assert canceled.status_code == 200 and canceled.json()["cancel_at_period_end"] is True
    assert canceled.json()["status"] == "active"  # it runs to the period's end
    assert await held_plan(billed, started["id"]) == ("starter", True)
    again = await billed.post("subscription", {"action": "cancel"})
    assert again.status_code == 200 and again.json()["cancel_at_period_end"] is True  # idempotent
    status = (await billed.get("status")).json()
    assert status["cancel_at_period_end"] is True

    resumed = await billed.post("subscription", {"action": "resume"})
    assert resumed.status_code == 200 and resumed.json()["cancel_at_period_end"] is False
    assert await held_plan(billed, started["id"]) == ("starter", False)
    tenant = billed.tenants["a"]
    assert await actions(billed, tenant, "billing.subscription.") == [
        "billing.subscription.cancel",
        "billing.subscription.resume",
    ]


async def test_subscription_requests_that_cannot_be_served(billed: Billed) -> None:
    none_yet = await billed.post("subscription", {"action": "cancel"})
    assert none_yet.status_code == 409 and none_yet.json()["error"]["code"] == "no_subscription"
    assert "create-checkout" in none_yet.json()["error"]["message"]
    await subscribe(billed, "starter")
    refused = {
        "unknown_plan": {"action": "change", "plan_id": "platinum"},
        "plan_not_purchasable": {"action": "change", "plan_id": "enterprise"},
        "plan_unchanged": {"action": "change", "plan_id": "starter"},
    }
    for code, body in refused.items():
        answer = await billed.post("subscription", body)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == code, answer.text
        assert answer.json()["error"]["param"] == "plan_id"
    for body, param in (
        ({"action": "change"}, "plan_id"),
        ({"action": "cancel", "plan_id": "starter"}, "plan_id"),
        ({"action": "pause"}, "action"),
        ({"action": "cancel", "when": "now"}, "when"),
    ):
        answer = await billed.post("subscription", body)
        assert answer.status_code == 400 and param in (answer.json()["error"]["param"] or ""), answer.text
    anonymous = await billed.client.post("/billing_provider/subscription", json={"action": "cancel"})
    assert anonymous.status_code == 401
    # Tenant B has no subscription of its own; A's is not B's to cancel.
    foreign = await billed.post("subscription", {"action": "cancel"}, who="b_admin")
    assert foreign.status_code == 409
    found = await account(billed, billed.tenants["a"])
    assert found is not None and found.cancel_at_period_end is False


@pytest.mark.parametrize("provider", ["sandbox"])  # the sandbox renews on our clock; localstripe cannot
async def test_a_cancellation_ends_the_subscription_at_the_period_end(billed: Billed) -> None:
    tenant = billed.tenants["a"]
    await subscribe(billed, "starter")
    await billed.post("subscription", {"action": "cancel"})
    found = await account(billed, tenant)
    assert found is not None and found.current_period_end is not None
    billed.advance(found.current_period_end.timestamp() - billed.clock.now() + 1)
    assert await billed.app.state.billing.provider.advance() == 1
    ended = await account(billed, tenant)
    assert ended is not None and ended.subscription_status == "canceled"
    status = (await billed.get("status")).json()
    assert (
        status["standing"]["state"] == "subscription_ended"
        and status["standing"]["code"] == "subscription_ended"
    )
    resumed = await billed.post("subscription", {"action": "resume"})
    assert resumed.status_code == 409 and resumed.json()["error"]["code"] == "subscription_not_active"
