"""``customer``, ``status``, ``billing-portal``, ``invoices`` and ``sync-models`` with each provider."""

from __future__ import annotations

import pytest

from tests.billing.conftest import Billed
from tests.billing.events_support import end_trial
from tests.conftest import BASE_URL

ADDRESS = {"line1": "Hauptstr. 1", "city": "Berlin", "postal_code": "10115", "country": "DE"}
TAX_ID = {"type": "eu_vat", "value": "DE123456789"}


async def provider_customer(billed: Billed, customer_id: str) -> dict:
    if billed.stripe is not None:
        found = billed.stripe.get(f"/v1/customers/{customer_id}")
        assert found.status_code == 200, found.text
        customer = found.json()
        customer["tax_ids"] = billed.stripe.get(f"/v1/customers/{customer_id}/tax_ids").json()["data"]
        return customer
    return await billed.app.state.billing.provider.store.get("customer", customer_id)


async def test_the_customer_is_created_once_and_then_updated(billed: Billed) -> None:
    created = await billed.post("customer", {"email": "billing@alpha.example", "name": "Alpha GmbH"})
    assert created.status_code == 200, created.text
    first = created.json()
    assert first["created"] is True and first["provider"] == billed.provider
    held = await provider_customer(billed, first["customer_id"])
    assert held["metadata"]["tenant_id"] == billed.tenants["a"]
    assert (held["email"], held["name"]) == ("billing@alpha.example", "Alpha GmbH")

    updated = (await billed.post("customer", {"address": ADDRESS, "tax_id": TAX_ID})).json()
    assert updated["created"] is False and updated["customer_id"] == first["customer_id"]
    held = await provider_customer(billed, first["customer_id"])
    assert held["address"]["city"] == "Berlin" and held["name"] == "Alpha GmbH"
    assert [(t["type"], t["value"]) for t in held["tax_ids"]] == [("eu_vat", "DE123456789")]
    assert (await billed.get("status")).json()["customer_id"] == first["customer_id"]

    bad = await billed.post("customer", {"name": "two\nlines"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "name"
    assert (await billed.post("customer", {"address": {**ADDRESS, "country": "Germany"}})).status_code == 400


async def test_status_shows_the_trial_then_the_subscription_and_the_card(billed: Billed) -> None:
    status = await billed.get("status")
    assert status.status_code == 200
    before = status.json()
    assert before["plan"] == {
        "id": "professional",
        "name": "Professional",
        "price": {"amount_minor": 39_900, "currency": "EUR", "interval": "month"},
    }
    assert before["standing"]["state"] == "trial" and before["payment_method"] is None
    assert (
        before["provider"] == billed.provider
        and before["trial_ends_at"] == before["standing"]["trial_ends_at"]
    )
    checkout = (await billed.post("create-checkout", {"plan_id": "professional"})).json()
    await billed.pay(checkout)
    await billed.post("exchange-redirect", {"session_ref": checkout["session_ref"]})
    await billed.relay()
    after = (await billed.get("status")).json()
    # Subscribed in the trial: trialing until its end, which keys count as paid (first charge then).
    assert after["standing"]["state"] == "active" and after["subscription"]["status"] == "trialing"
    assert after["subscription"]["current_period_end"] == before["trial_ends_at"]
    assert after["subscription"]["current_period_end"] > after["subscription"]["current_period_start"]
    assert after["cancel_at_period_end"] is False and after["grace_until"] is None
    assert after["payment_method"] == {
        "type": "card",
        "brand": "visa",
        "last4": "4242",
        "exp_month": 12,
        "exp_year": 2030,
    }
    other = (await billed.get("status", who="b_admin")).json()
    assert other["subscription"] is None and other["tenant_id"] == billed.tenants["b"]


async def test_invoices_list_the_tenants_invoices_newest_first(billed: Billed) -> None:
    assert (await billed.get("invoices")).json() == {
        "object": "list",
        "data": [],
        "has_more": False,
        "next_starting_after": None,
    }
    await end_trial(billed, billed.tenants["a"])  # charged at payment (within the trial: at its end)
    checkout = (await billed.post("create-checkout", {"plan_id": "starter"})).json()
    await billed.pay(checkout)
    await billed.post("exchange-redirect", {"session_ref": checkout["session_ref"]})
    await billed.relay()
    listed = (await billed.get("invoices")).json()
    assert len(listed["data"]) == 1
    invoice = listed["data"][0]
    assert (invoice["status"], invoice["amount_due_minor"], invoice["amount_paid_minor"]) == (
        "paid",
        4900,
        4900,
    )
    assert invoice["currency"] == "EUR" and invoice["amount_due"] == "49.00"
    assert (await billed.get("invoices", who="b_admin")).json()["data"] == []
    foreign = await billed.get("invoices", who="b_admin", starting_after=invoice["id"])
    assert foreign.status_code == 404
    assert (await billed.get("invoices", limit=0)).status_code == 400


@pytest.mark.parametrize("provider", ["sandbox"])  # renewals need the sandbox's clock; localstripe has none
async def test_invoices_are_paginated(billed: Billed) -> None:
    checkout = (await billed.post("create-checkout", {"plan_id": "starter"})).json()
    await billed.pay(checkout)
    for _ in range(2):  # two renewals: three invoices
        billed.advance(32 * 86_400)
        await billed.app.state.billing.provider.advance()
    first = (await billed.get("invoices", limit=2)).json()
    assert len(first["data"]) == 2 and first["has_more"] is True
    rest = (await billed.get("invoices", limit=2, starting_after=first["next_starting_after"])).json()
    assert len(rest["data"]) == 1 and rest["has_more"] is False
    created = [i["created_at"] for i in first["data"] + rest["data"]]
    assert (
        created == sorted(created, reverse=True) and len({i["id"] for i in first["data"] + rest["data"]}) == 3
    )


async def test_billing_portal(billed: Billed) -> None:
    answer = await billed.post("billing-portal", {"return_url": f"{BASE_URL}/settings"})
    if billed.stripe is not None:  # localstripe has no portal; on Stripe it is one small function
        assert answer.status_code == 501 and answer.json()["error"]["code"] == "portal_unavailable"
        return
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    portal = answer.json()
    assert portal["url"].startswith(f"{BASE_URL}/billing_provider/sandbox/portal/bps_sbx_")
    page = await billed.client.get(portal["url"].removeprefix(BASE_URL))
    assert page.status_code == 200 and f'href="{BASE_URL}/settings"' in page.text
    refused = await billed.post("billing-portal", {"return_url": "https://elsewhere.example/"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "return_url_not_allowed"
    # An unclosed IPv6 bracket (found by schemathesis: it was a 500) is a bad address like any other.
    broken = await billed.post("billing-portal", {"return_url": "https://[\u008e\u00c5"})
    assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_url"


async def test_sync_models_twice_creates_nothing_the_second_time(billed: Billed) -> None:
    first = await billed.post("sync-models", {}, who="platform")
    assert first.status_code == 200, first.text
    created = first.json()["created"]
    keys = {entry["lookup_key"]: entry for entry in created}
    assert (
        keys["plan:starter:month"]["amount_minor"] == 4900
        and keys["plan:starter:month"]["interval"] == "month"
    )
    assert keys["plan:professional:month"]["amount_minor"] == 39_900
    assert "plan:enterprise:month" not in keys  # priced by contract
    assert keys["model:gpt-4o:input_mtok"]["amount_minor"] == 250  # EUR 2.50 per 1M tokens
    assert keys["model:gpt-4o-mini:output_mtok"]["amount_minor"] == 60 and first.json()["kept"] == []
    second = (await billed.post("sync-models", {}, who="platform")).json()
    assert second["created"] == [] and len(second["kept"]) == len(created)
    assert {e["provider_id"] for e in second["kept"]} == {e["provider_id"] for e in created}
    if billed.stripe is not None:
        plans = billed.stripe.get("/v1/plans", limit=100).json()["data"]
        assert sorted(p["id"] for p in plans) == sorted(e["provider_id"] for e in created)
        starter = next(p for p in plans if p["metadata"].get("plan_id") == "starter")
        assert (starter["amount"], starter["currency"], starter["interval"]) == (4900, "eur", "month")
    assert (await billed.post("sync-models", {})).status_code == 403  # a tenant admin
    assert (await billed.post("sync-models", {"dry_run": True}, who="platform")).status_code == 400
