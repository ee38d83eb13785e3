"""``/<segment>/multi-year-schedule``: yearly phases kept by us, each applied at its boundary, with each provider."""

from __future__ import annotations

from datetime import datetime

from tests.billing.conftest import Billed
from tests.billing.events_support import DAY, actions, engine, plan_of
from tests.billing.test_subscription import held_plan, subscribe

PHASES = [{"plan_id": "starter", "years": 1}, {"plan_id": "professional", "years": 2}]


def at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def test_a_schedule_applies_its_first_phase_now_and_the_next_at_its_boundary(billed: Billed) -> None:
    tenant = billed.tenants["a"]
    started = await subscribe(billed, "professional")
    created = await billed.post("multi-year-schedule", {"phases": PHASES})
    assert created.status_code == 200, created.text
    schedule = created.json()
    assert schedule["object"] == "subscription_schedule" and schedule["id"].startswith("sch_")
    assert schedule["status"] == "active" and schedule["current_phase"] == 0
    first, second = schedule["phases"]
    assert first["applied_at"] is not None and second["applied_at"] is None
    assert at(second["starts_at"]) - at(first["starts_at"]) in (365 * DAY, 366 * DAY)
    assert at(second["ends_at"]) - at(second["starts_at"]) in (730 * DAY, 731 * DAY)
    assert schedule["next_change_at"] == second["starts_at"]
    assert await plan_of(billed, tenant) == "starter"  # the first phase's plan, now
    assert (await held_plan(billed, started["id"]))[0] == "starter"

    billed.advance(at(second["starts_at"]) - billed.clock.now() - 60)
    assert await engine(billed).schedules.run_once() == 0  # a minute early: nothing
    billed.advance(61)
    assert await engine(billed).schedules.run_once() == 1
    assert await engine(billed).schedules.run_once() == 0  # once
    assert await plan_of(billed, tenant) == "professional"
    assert (await held_plan(billed, started["id"]))[0] == "professional"
    now = (await billed.get("multi-year-schedule")).json()
    assert now["current_phase"] == 1 and now["current_plan_id"] == "professional"
    assert now["status"] == "completed" and now["next_change_at"] is None  # every phase has started
    applied = [
        "billing.schedule.create",
        "billing.schedule.phase",
        "billing.schedule.phase",
    ]  # now; at the boundary
    assert await actions(billed, tenant, "billing.schedule.") == applied


async def test_a_new_schedule_replaces_the_active_one(billed: Billed) -> None:
    await subscribe(billed, "starter")
    first = (await billed.post("multi-year-schedule", {"phases": PHASES})).json()
    start = "2030-01-01T00:00:00Z"
    second = await billed.post(
        "multi-year-schedule", {"phases": [{"plan_id": "professional", "years": 3}], "start": start}
    )
    assert second.status_code == 200, second.text
    view = second.json()
    assert view["id"] != first["id"] and view["current_phase"] is None and view["next_change_at"] == start
    assert (await billed.get("multi-year-schedule")).json()["id"] == view["id"]
    assert await engine(billed).schedules.run_once() == 0  # the old one no longer applies anything
    assert await plan_of(billed, billed.tenants["a"]) == "starter"


async def test_schedule_requests_that_cannot_be_served(billed: Billed) -> None:
    missing = await billed.get("multi-year-schedule")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "no_schedule"
    unsubscribed = await billed.post("multi-year-schedule", {"phases": PHASES})
    assert unsubscribed.status_code == 409 and unsubscribed.json()["error"]["code"] == "no_subscription"
    await subscribe(billed, "starter")
    for body, param in (
        ({"phases": []}, "phases"),
        ({"phases": [{"plan_id": "starter", "years": 0}]}, "years"),
        ({"phases": [{"plan_id": "starter", "years": "2"}]}, "years"),  # a JSON integer, not text
        ({"phases": [{"plan_id": "starter", "years": 5}] * 3}, "phases"),  # more than 10 years
        (
            {"phases": [{"plan_id": "starter", "years": 1}, {"plan_id": "enterprise", "years": 1}]},
            "phases[1].plan_id",
        ),
        ({"phases": PHASES, "start": "2020-01-01T00:00:00Z"}, "start"),
        ({"phases": PHASES, "start": "2031-01-01T00:00:00"}, "start"),  # no offset
        ({"phases": PHASES, "extra": 1}, "extra"),
    ):
        answer = await billed.post("multi-year-schedule", body)
        assert answer.status_code == 400, (body, answer.text)
        assert param in (answer.json()["error"]["param"] or "body"), (param, answer.text)
    assert (await billed.get("multi-year-schedule", who="b_admin")).status_code == 404
    anonymous = await billed.client.get("/billing_provider/multi-year-schedule")
    assert anonymous.status_code == 401
