"""Booking date ranges for consulting packages that need one (content pack ``booking_days``): the
seller's ``local_delivery`` options with a ``delivery_window``, chosen by ``selected_fulfillment_options``;
the session is ``not_ready_for_payment`` with a spec message until a valid range is chosen; the range
goes into the order (and the admin's order view). Every answer is validated against the spec."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from tests.commerce.conftest import BOOKED, TRAINING, Shop, World, assert_valid, payment
from tests.commerce.test_checkout_sessions import error_of

BERLIN = ZoneInfo("Europe/Berlin")
LINE = f"li_{BOOKED}"


def today(shop: Shop) -> date:
    return datetime.fromtimestamp(shop.clock.now(), BERLIN).date()


def next_weekday(start: date, weekday: int) -> date:
    return start + timedelta(days=(weekday - start.weekday()) % 7)


def working_days_from(start: date, count: int) -> date:
    """The ``count``-th working day (Monday to Friday) from ``start``, ``start`` being the first."""
    day, seen = start, 1
    while seen < count:
        day += timedelta(days=1)
        seen += day.weekday() < 5
    return day


def at(day: date, hour: int) -> str:
    return (
        datetime(day.year, day.month, day.day, hour, tzinfo=BERLIN)
        .astimezone(UTC)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    )


async def choose(shop: Shop, session: dict, start: date | str, **option: object) -> dict:
    option_id = start if isinstance(start, str) else f"booking:{BOOKED}:{start.isoformat()}"
    chosen = {"type": "local_delivery", "option_id": option_id, "item_ids": [LINE], **option}
    return await shop.post(f"/checkout_sessions/{session['id']}", {"selected_fulfillment_options": [chosen]})


def errors(session: dict) -> list[dict]:
    return [m for m in session["messages"] if m["type"] == "error"]


async def test_a_booked_package_waits_for_a_date_range_then_carries_it_into_the_order(world: World) -> None:
    made = (
        await world.client.post(
            "/admin/platform/agent-platforms",
            json={"name": "Booking assistant"},
            headers=world.auth("platform"),
        )
    ).json()
    shop = Shop(world.app, world.client, world.clock, made["credential"], made["id"], made["signing_secret"])
    session = await shop.create(BOOKED, TRAINING)
    assert session["status"] == "not_ready_for_payment"
    [problem] = errors(session)
    assert (problem["code"], problem["param"]) == ("missing", "$.selected_fulfillment_options")
    assert "3 working days" in problem["content"] and f"booking:{BOOKED}:" in problem["content"]
    offered = [o for o in session["fulfillment_options"] if o["type"] == "local_delivery"]
    assert len(offered) == 8
    for option in offered:
        start = date.fromisoformat(option["id"].removeprefix(f"booking:{BOOKED}:"))
        assert start.weekday() == 0 and start >= today(shop) + timedelta(days=14)  # Mondays, lead time
        end = working_days_from(start, 3)
        assert option["delivery_window"] == {"start": at(start, 9), "end": at(end, 17)}
    refused = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert error_of(refused, 400, "missing")["param"] == "$.selected_fulfillment_options"

    first = offered[0]
    answer = await choose(shop, session, first["id"])
    assert answer.status_code == 200, answer.text
    ready = answer.json()
    assert_valid("CheckoutSession", ready)
    assert ready["status"] == "ready_for_payment" and not errors(ready)
    assert {"type": "local_delivery", "option_id": first["id"], "item_ids": [LINE]} in ready[
        "selected_fulfillment_options"
    ]
    done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert done.status_code == 200, done.text
    assert_valid("CheckoutSessionWithOrder", done.json())
    order = (await shop.client.get(done.json()["order"]["permalink_url"])).json()
    assert_valid("Order", order)
    [fulfillment] = order["fulfillments"]
    window = first["delivery_window"]
    assert fulfillment["estimated_delivery"] == {"earliest": window["start"], "latest": window["end"]}
    assert fulfillment["line_items"] == [{"id": LINE, "quantity": 1}]
    booked_line = next(line for line in order["line_items"] if line["id"] == LINE)
    assert window["start"] in booked_line["description"] and "3 working days" in booked_line["description"]
    admin = await world.client.get("/admin/platform/agent-orders", headers=world.auth("platform"))
    assert admin.status_code == 200, admin.text
    [listed] = [row for row in admin.json()["data"] if row["id"] == order["id"]]
    [line] = [line for line in listed["lines"] if line["product_id"] == BOOKED]
    assert line["booking"] == {**window, "days": 3, "option_id": first["id"]}


async def test_any_weekday_start_within_the_limits_is_accepted_and_spans_working_days(shop: Shop) -> None:
    session = await shop.create(BOOKED)
    thursday = next_weekday(today(shop) + timedelta(days=20), 3)
    answer = await choose(shop, session, thursday)
    assert answer.status_code == 200, answer.text
    ready = answer.json()
    assert_valid("CheckoutSession", ready)
    assert ready["status"] == "ready_for_payment"
    [option] = [o for o in ready["fulfillment_options"] if o["id"].endswith(thursday.isoformat())]
    monday = thursday + timedelta(days=4)  # Thursday, Friday, then Monday: the weekend is skipped
    assert option["delivery_window"] == {"start": at(thursday, 9), "end": at(monday, 17)}
    # Taking the package out drops its booking; put back, it needs a range again.
    path = f"/checkout_sessions/{session['id']}"
    assert (await shop.post(path, {"line_items": [{"id": TRAINING}]})).status_code == 200
    back = (await shop.post(path, {"line_items": [{"id": BOOKED}]})).json()
    assert back["status"] == "not_ready_for_payment" and errors(back)[0]["code"] == "missing"


async def test_an_invalid_range_keeps_the_session_unpayable_with_a_clear_message(shop: Shop) -> None:
    session = await shop.create(BOOKED)
    saturday = next_weekday(today(shop) + timedelta(days=20), 5)
    cases = {
        saturday: "is a Saturday; a booking starts on a weekday",
        today(shop) + timedelta(days=3): "at least 14 days ahead",
        next_weekday(today(shop) + timedelta(days=200), 0): "at most 180 days ahead",
    }
    for start, why in cases.items():
        answer = await choose(shop, session, start)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert_valid("CheckoutSession", body)
        assert body["status"] == "not_ready_for_payment", start
        [problem] = errors(body)
        assert problem["code"] == "invalid" and why in problem["content"], (start, problem)
        refused = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
        assert why in error_of(refused, 400, "invalid")["message"]
    for bad in (f"booking:{BOOKED}:2026-02-30", f"booking:{TRAINING}:2027-01-04", "booking:nope"):
        error_of(await choose(shop, session, bad), 400, "invalid_fulfillment_option")
    monday = next_weekday(today(shop) + timedelta(days=20), 0)
    error_of(await choose(shop, session, monday, type="digital"), 400, "invalid")
    other = await shop.create(TRAINING)
    wrong_line = {
        "type": "local_delivery",
        "option_id": f"booking:{BOOKED}:{monday}",
        "item_ids": [f"li_{TRAINING}"],
    }
    answer = await shop.post(
        f"/checkout_sessions/{other['id']}", {"selected_fulfillment_options": [wrong_line]}
    )
    error_of(answer, 400, "invalid")


def advance_to(shop: Shop, hour: int) -> None:
    """Move the clock forward to the next ``hour``:00 Berlin time."""
    now = datetime.fromtimestamp(shop.clock.now(), BERLIN)
    target = now.replace(hour=hour, minute=0, second=0, microsecond=0)
    if target <= now:
        target += timedelta(days=1)
    shop.clock.advance((target - now).total_seconds())


async def test_a_booking_that_comes_too_close_stops_the_payment_again(shop: Shop) -> None:
    advance_to(shop, 10)
    while (today(shop) + timedelta(days=14)).weekday() >= 5:  # the earliest start must be a weekday
        shop.clock.advance(86_400)
    session = await shop.create(BOOKED)
    start = today(shop) + timedelta(days=14)  # the earliest start allowed today
    ready = (await choose(shop, session, start)).json()
    assert ready["status"] == "ready_for_payment" and not errors(ready)
    advance_to(shop, 0)  # past midnight: 13 days ahead now, while the session (a day) still lives
    shop.clock.advance(1800)
    again = (await shop.get(f"/checkout_sessions/{session['id']}")).json()
    assert_valid("CheckoutSession", again)
    assert again["status"] == "not_ready_for_payment"
    [problem] = errors(again)
    assert problem["code"] == "invalid" and "at least 14 days ahead" in problem["content"]
    refused = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    error_of(refused, 400, "invalid")
