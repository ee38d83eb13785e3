"""Completing a session with the sandbox provider's delegated payment tokens: an order with its
permalink, a declined token leaving the session completable, issuer authentication (3-D Secure),
cancel after complete refused, and one order and one charge under concurrent completes."""

from __future__ import annotations

import asyncio
import copy

from sqlmodel import select

from agent_server.billing.sandbox.store import SandboxObject
from agent_server.commerce.tables import CheckoutSessionRecord, CommerceOrderRecord
from tests.commerce.conftest import Shop, assert_valid, examples, payment
from tests.commerce.test_checkout_sessions import error_of


async def charges(shop: Shop) -> list[dict]:
    """The sandbox provider's records of ACP charges (its payment intents)."""
    async with shop.app.state.services.db.session() as session:
        rows = (
            await session.execute(select(SandboxObject).where(SandboxObject.kind == "payment_intent"))
        ).scalars()
        return [row.data for row in rows if "acp_reference" in row.data.get("metadata", {})]


async def orders(shop: Shop) -> list[CommerceOrderRecord]:
    async with shop.app.state.services.db.session() as session:
        return list((await session.execute(select(CommerceOrderRecord))).scalars())


async def test_completing_places_an_order_with_a_permalink(shop: Shop) -> None:
    session = await shop.create()
    body = copy.deepcopy(examples()["complete_checkout_session_request"])  # the spec's example request
    body["payment_data"]["instrument"]["credential"]["token"] = "spt_sandbox_success"
    answer = await shop.post(f"/checkout_sessions/{session['id']}/complete", body)
    assert answer.status_code == 200, answer.text
    done = answer.json()
    assert_valid("CheckoutSessionWithOrder", done)
    assert done["status"] == "completed" and done["order"]["checkout_session_id"] == session["id"]
    assert done["buyer"]["email"] == "johnsmith@mail.com"  # the complete request's buyer
    permalink = await shop.client.get(done["order"]["permalink_url"])
    assert permalink.status_code == 200 and permalink.json()["id"] == done["order"]["id"]
    assert_valid("Order", permalink.json())
    again = await shop.get(f"/checkout_sessions/{session['id']}")
    assert again.json()["status"] == "completed" and again.json()["order"]["id"] == done["order"]["id"]
    assert_valid("CheckoutSessionWithOrder", again.json())
    [charge] = await charges(shop)
    assert charge["status"] == "succeeded" and charge["amount"] == done["totals"][-1]["amount"]
    [order] = await orders(shop)
    assert (order.amount_minor, order.payment_ref, order.email) == (
        charge["amount"],
        charge["id"],
        "johnsmith@mail.com",
    )
    cancel = await shop.post(f"/checkout_sessions/{session['id']}/cancel", {})
    error_of(cancel, 405, "checkout_session_completed")
    error_of(
        await shop.post(f"/checkout_sessions/{session['id']}/complete", payment()),
        409,
        "checkout_session_completed",
    )


async def test_a_declined_token_leaves_the_session_completable(shop: Shop) -> None:
    session = await shop.create()
    declined = await shop.post(
        f"/checkout_sessions/{session['id']}/complete", payment("spt_sandbox_declined")
    )
    error_of(declined, 402, "payment_declined")
    state = (await shop.get(f"/checkout_sessions/{session['id']}")).json()
    assert_valid("CheckoutSession", state)
    assert state["status"] == "ready_for_payment"
    assert any(m.get("code") == "payment_declined" for m in state["messages"])
    paid = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert paid.status_code == 200, paid.text
    assert_valid("CheckoutSessionWithOrder", paid.json())
    assert sorted(c["status"] for c in await charges(shop)) == ["requires_payment_method", "succeeded"]
    assert len(await orders(shop)) == 1


async def test_issuer_authentication_is_asked_for_and_then_honoured(shop: Shop) -> None:
    session = await shop.create()
    path = f"/checkout_sessions/{session['id']}/complete"
    first = await shop.post(path, payment("spt_sandbox_authentication_required"))
    assert error_of(first, 400, "requires_3ds")["param"] == "$.authentication_result"
    state = (await shop.get(f"/checkout_sessions/{session['id']}")).json()
    assert_valid("CheckoutSession", state)
    assert (
        state["status"] == "authentication_required" and state["authentication_metadata"]["directory_server"]
    )
    error_of(await shop.post(path, payment("spt_sandbox_authentication_required")), 400, "requires_3ds")
    denied = {
        **payment("spt_sandbox_authentication_required"),
        "authentication_result": {"outcome": "denied"},
    }
    error_of(await shop.post(path, denied), 402, "payment_declined")
    assert await charges(shop) == []  # nothing charged without authentication
    await shop.post(path, payment("spt_sandbox_authentication_required"))  # asked again
    body = copy.deepcopy(examples()["complete_session_with_authentication_result_request"])
    body["payment_data"]["instrument"]["credential"]["token"] = "spt_sandbox_authentication_required"
    done = await shop.post(path, body)
    assert done.status_code == 200, done.text
    assert_valid("CheckoutSessionWithOrder", done.json())
    assert [c["status"] for c in await charges(shop)] == ["succeeded"]


async def test_fifty_concurrent_completes_with_one_key_make_one_order_and_one_charge(shop: Shop) -> None:
    session = await shop.create()
    path = f"/checkout_sessions/{session['id']}/complete"
    answers = await asyncio.gather(*(shop.post(path, payment(), key="one-key") for _ in range(50)))
    statuses = sorted({a.status_code for a in answers})
    assert set(statuses) <= {200, 409}, [a.text for a in answers if a.status_code not in (200, 409)]
    ok = [a.json() for a in answers if a.status_code == 200]
    assert ok and len({o["order"]["id"] for o in ok}) == 1
    for busy in (a for a in answers if a.status_code == 409):
        assert busy.json()["code"] == "idempotency_in_flight" and busy.headers["Retry-After"]
    later = await shop.post(path, payment(), key="one-key")
    assert later.status_code == 200 and later.headers["Idempotent-Replayed"] == "true"
    assert later.json()["order"]["id"] == ok[0]["order"]["id"]
    assert len(await orders(shop)) == 1 and len(await charges(shop)) == 1


async def test_concurrent_completes_with_different_keys_charge_once(shop: Shop) -> None:
    session = await shop.create()
    path = f"/checkout_sessions/{session['id']}/complete"
    answers = await asyncio.gather(*(shop.post(path, payment()) for _ in range(10)))
    assert sum(a.status_code == 200 for a in answers) == 1
    for other in (a for a in answers if a.status_code != 200):
        assert other.status_code == 409 and other.json()["code"] in (
            "checkout_session_busy",
            "checkout_session_complete_in_progress",
            "checkout_session_completed",
        )
        assert_valid("Error", other.json())
    assert len(await orders(shop)) == 1 and len(await charges(shop)) == 1


async def cut_short(shop: Shop, session_id: str) -> None:
    """As if the process completing ``session_id`` died after claiming it (attempt 1)."""
    async with shop.app.state.services.db.session() as db:
        record = await db.get(CheckoutSessionRecord, session_id)
        record.status, record.cart = "complete_in_progress", {**record.cart, "attempts": 1}
        db.add(record)


async def test_a_completion_cut_short_is_finished_from_the_providers_record(shop: Shop) -> None:
    paid, unpaid = await shop.create(), await shop.create()
    payments = shop.app.state.commerce.sessions.payments
    charge = await payments.charge("spt_sandbox_success", 69_000, "eur", f"{paid['id']}:1", None)
    for session in (paid, unpaid):
        await cut_short(shop, session["id"])
    busy = await shop.post(f"/checkout_sessions/{paid['id']}/complete", payment())
    error_of(busy, 409, "checkout_session_complete_in_progress")  # while it may still be running
    shop.clock.advance(121)
    recovered = (await shop.get(f"/checkout_sessions/{paid['id']}")).json()
    assert_valid("CheckoutSessionWithOrder", recovered)
    assert recovered["status"] == "completed"
    [order] = await orders(shop)
    assert order.payment_ref == charge.ref and len(await charges(shop)) == 1
    again = (await shop.get(f"/checkout_sessions/{unpaid['id']}")).json()
    assert again["status"] == "ready_for_payment"  # nothing was charged: payable again
    assert (await shop.post(f"/checkout_sessions/{unpaid['id']}/complete", payment())).status_code == 200
