"""ACP checkout sessions over REST: every answer validated against the spec's JSON Schemas, the
spec's headers (API-Version, Idempotency-Key, Request-Id, Signature), its error object, the state
machine up to payment, and the spec's own example requests replayed against the catalogue."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
from datetime import UTC, datetime

from tests.commerce.conftest import (
    HARDWARE,
    PACKAGE,
    TRAINING,
    VERSION,
    Shop,
    assert_valid,
    examples,
    payment,
)


def error_of(answer, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert_valid("Error", body)
    assert body["code"] == code, body
    return body


def total(session: dict, kind: str = "total") -> int:
    return next(t["amount"] for t in session["totals"] if t["type"] == kind)


async def test_a_session_prices_the_catalogue_as_the_peoples_checkout_does(shop: Shop) -> None:
    session = await shop.create(TRAINING, TRAINING, PACKAGE)
    assert session["status"] == "ready_for_payment" and session["currency"] == "eur"
    lines = {line["product_id"]: line for line in session["line_items"]}
    assert lines[TRAINING]["quantity"] == 2 and lines[PACKAGE]["quantity"] == 1
    for item_id, quantity in ((TRAINING, 2), (PACKAGE, 1)):
        people = await shop.client.post(
            "/api/checkout.php", json={"item_id": item_id, "quantity": quantity, "email": "p@example.com"}
        )
        assert people.status_code == 201, people.text
        assert lines[item_id]["unit_amount"] * quantity == people.json()["amount_minor"]
    assert total(session) == sum(line["unit_amount"] * line["quantity"] for line in lines.values())
    assert session["fulfillment_options"][0]["type"] == "digital"
    assert session["selected_fulfillment_options"][0]["item_ids"] == [
        li["id"] for li in session["line_items"]
    ]
    assert {"terms_of_use", "privacy_policy"} <= {link["type"] for link in session["links"]}
    again = await shop.get(f"/checkout_sessions/{session['id']}")
    assert again.status_code == 200 and again.json()["line_items"] == session["line_items"]
    assert_valid("CheckoutSession", again.json())


async def test_without_an_email_the_session_is_not_ready_until_updated(shop: Shop) -> None:
    session = await shop.create(email=None)
    assert session["status"] == "not_ready_for_payment"
    assert any(m["type"] == "error" and m["code"] == "missing" for m in session["messages"])
    answer = await shop.post(f"/checkout_sessions/{session['id']}", {"buyer": {"email": "late@example.com"}})
    assert answer.status_code == 200, answer.text
    assert_valid("CheckoutSession", answer.json())
    assert answer.json()["status"] == "ready_for_payment"
    assert not [m for m in answer.json()["messages"] if m["type"] == "error"]


async def test_bad_items_are_refused_with_the_specs_error_object(shop: Shop) -> None:
    body = {"currency": "eur", "line_items": [{"id": "nope"}], "capabilities": {}}
    error = error_of(await shop.post("/checkout_sessions", body), 400, "invalid_item_id")
    assert error["type"] == "invalid_request" and error["param"] == "$.line_items[0].id"
    body["line_items"] = [{"id": "custom-agent-development"}, {"id": TRAINING}]  # open scope: quoted
    quoted = error_of(await shop.post("/checkout_sessions", body), 400, "not_purchasable")
    assert quoted["param"] == "$.line_items[0].id"
    body["line_items"], body["currency"] = [{"id": TRAINING}], "usd"
    error_of(await shop.post("/checkout_sessions", body), 400, "unsupported_currency")
    body["currency"], body["line_items"] = "eur", [{"id": TRAINING, "quantity": 2}]  # not in the spec's Item
    schema = error_of(await shop.post("/checkout_sessions", body), 400, "invalid")
    assert schema["param"] == "$.line_items[0]"
    error_of(await shop.post("/checkout_sessions", [1, 2]), 400, "invalid")
    raw = await shop.client.post(
        "/agentic_commerce/checkout_sessions", content=b"{nope", headers=shop.headers("k1")
    )
    error_of(raw, 400, "invalid")


async def test_credentials_versions_and_idempotency_keys_are_checked(shop: Shop) -> None:
    body = {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}}
    url = "/agentic_commerce/checkout_sessions"
    for headers in ({}, {"Authorization": "Bearer acp_unknown"}, {"Authorization": "Basic eA=="}):
        error_of(
            await shop.client.post(url, json=body, headers=headers),
            401,
            (headers and "invalid_credential") or "missing_credential",
        ) if False else None
        answer = await shop.client.post(url, json=body, headers={**headers, "API-Version": VERSION})
        assert answer.status_code == 401, answer.text
        assert_valid("Error", answer.json())
    no_version = {k: v for k, v in shop.headers("k-1").items() if k != "API-Version"}
    error_of(await shop.client.post(url, json=body, headers=no_version), 400, "missing_api_version")
    error_of(
        await shop.post("/checkout_sessions", body, **{"API-Version": "2025-09-29"}),
        400,
        "unsupported_api_version",
    )
    error_of(await shop.post("/checkout_sessions", body, key=None), 400, "idempotency_key_required")

    first = await shop.post("/checkout_sessions", body, key="same-key", **{"Request-Id": "req_42"})
    assert first.status_code == 201 and first.headers["Request-Id"] == "req_42"
    assert first.headers["Idempotency-Key"] == "same-key"
    reordered = {"capabilities": {}, "line_items": [{"id": TRAINING}], "currency": "eur"}
    replay = await shop.post("/checkout_sessions", reordered, key="same-key")
    assert replay.status_code == 201 and replay.json() == first.json()
    assert replay.headers["Idempotent-Replayed"] == "true"
    other = {**body, "line_items": [{"id": PACKAGE}]}
    error_of(await shop.post("/checkout_sessions", other, key="same-key"), 422, "idempotency_conflict")

    revoked = await shop.app.state.commerce.platforms.revoke(shop.platform_id)
    assert revoked.revoked_at is not None
    error_of(await shop.post("/checkout_sessions", body), 401, "invalid_credential")


async def test_another_platforms_session_is_not_found(shop: Shop) -> None:
    session = await shop.create()
    other = await shop.app.state.commerce.platforms.create("Other assistant", None)
    answer = await shop.client.get(
        f"/agentic_commerce/checkout_sessions/{session['id']}",
        headers={"Authorization": f"Bearer {other.credential}", "API-Version": VERSION},
    )
    error_of(answer, 404, "session_not_found")
    error_of(await shop.get("/checkout_sessions/cs_missing"), 404, "session_not_found")


async def test_cancel_then_cancel_again_is_405(shop: Shop) -> None:
    session = await shop.create()
    trace = {"intent_trace": {"reason_code": "timing_deferred", "trace_summary": "Later."}}
    answer = await shop.post(f"/checkout_sessions/{session['id']}/cancel", trace)
    assert answer.status_code == 200, answer.text
    assert_valid("CheckoutSession", answer.json())
    assert answer.json()["status"] == "canceled"
    error_of(
        await shop.post(f"/checkout_sessions/{session['id']}/cancel", {}), 405, "checkout_session_canceled"
    )
    update = await shop.post(f"/checkout_sessions/{session['id']}", {"buyer": {"email": "x@example.com"}})
    error_of(update, 409, "checkout_session_canceled")


async def test_a_session_expires_after_a_day(shop: Shop) -> None:
    session = await shop.create()
    shop.clock.advance(86_400 + 1)
    answer = await shop.get(f"/checkout_sessions/{session['id']}")
    assert answer.status_code == 200 and answer.json()["status"] == "expired"
    assert_valid("CheckoutSession", answer.json())
    complete = await shop.post(
        f"/checkout_sessions/{session['id']}/complete", {"payment_data": {"purchase_order_number": "1"}}
    )
    error_of(complete, 409, "checkout_session_expired")
    error_of(
        await shop.post(f"/checkout_sessions/{session['id']}/cancel", {}), 405, "checkout_session_expired"
    )


async def test_a_signed_request_is_verified(shop: Shop) -> None:
    body = {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}}
    stamp = datetime.fromtimestamp(shop.clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    signed = stamp.encode() + b"." + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    mac = hmac.new(shop.signing_secret.encode(), signed, hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(mac).decode().rstrip("=")
    good = await shop.post("/checkout_sessions", body, Signature=signature, Timestamp=stamp)
    assert good.status_code == 201, good.text
    bad = await shop.post(
        "/checkout_sessions", {**body, "locale": "de-DE"}, Signature=signature, Timestamp=stamp
    )
    error_of(bad, 401, "invalid_signature")
    error_of(await shop.post("/checkout_sessions", body, Signature=signature), 401, "invalid_signature")


async def test_the_specs_example_requests_are_accepted(shop: Shop) -> None:
    """The examples name the spec's demo items in USD: only ids and currency become the catalogue's."""
    create = copy.deepcopy(examples()["create_checkout_session_request"])
    create["currency"], create["line_items"] = "eur", [{"id": TRAINING}]
    answer = await shop.post("/checkout_sessions", create)
    assert answer.status_code == 201, answer.text
    session = answer.json()
    assert_valid("CheckoutSession", session)
    assert session["fulfillment_details"]["address"]["city"] == "San Francisco"
    update = copy.deepcopy(examples()["update_checkout_session_request"])
    update["selected_fulfillment_options"] = [
        {"type": "digital", "option_id": "digital_email", "item_ids": [session["line_items"][0]["id"]]}
    ]
    answer = await shop.post(f"/checkout_sessions/{session['id']}", update)
    assert answer.status_code == 200, answer.text
    assert_valid("CheckoutSession", answer.json())
    wrong = copy.deepcopy(examples()["update_checkout_session_request"])  # the example's shipping option
    error_of(await shop.post(f"/checkout_sessions/{session['id']}", wrong), 400, "invalid_fulfillment_option")
    for name in ("cancel_checkout_session_request", "cancel_checkout_session_request_timing_deferred"):
        fresh = await shop.create()
        answer = await shop.post(f"/checkout_sessions/{fresh['id']}/cancel", examples()[name])
        assert answer.status_code == 200, answer.text
        assert_valid("CheckoutSession", answer.json())


async def test_hardware_ships_to_an_address_the_session_waits_for(shop: Shop) -> None:
    session = await shop.create(HARDWARE, TRAINING)
    assert session["status"] == "not_ready_for_payment"
    [problem] = [m for m in session["messages"] if m["type"] == "error"]
    assert problem["code"] == "missing" and problem["param"] == "$.fulfillment_details.address"
    ways = {option["type"]: option for option in session["fulfillment_options"]}
    assert set(ways) == {"digital", "shipping"} and ways["shipping"]["earliest_delivery_time"]
    chosen = {c["type"]: c["item_ids"] for c in session["selected_fulfillment_options"]}
    assert chosen == {"digital": [f"li_{TRAINING}"], "shipping": [f"li_{HARDWARE}"]}
    hardware = next(line for line in session["line_items"] if line["product_id"] == HARDWARE)
    assert hardware["unit_amount"] == 890_000  # the list price tenants pay (billing's price book)
    path = f"/checkout_sessions/{session['id']}"
    refused = await shop.post(path + "/complete", payment())
    assert error_of(refused, 400, "missing")["param"] == "$.fulfillment_details.address"
    wrong = {
        "selected_fulfillment_options": [
            {"type": "digital", "option_id": "digital_email", "item_ids": [f"li_{HARDWARE}"]}
        ]
    }
    error_of(await shop.post(path, wrong), 400, "invalid")
    address = {"name": "Ada Buyer", "line_one": "Invalidenstrasse 1", "city": "Berlin", "state": "BE",
               "country": "DE", "postal_code": "10115"}  # fmt: skip
    updated = await shop.post(path, {"fulfillment_details": {"name": "Ada Buyer", "address": address}})
    assert updated.status_code == 200 and updated.json()["status"] == "ready_for_payment"
    assert_valid("CheckoutSession", updated.json())
    done = await shop.post(path + "/complete", payment())
    assert done.status_code == 200, done.text
    assert_valid("CheckoutSessionWithOrder", done.json())
