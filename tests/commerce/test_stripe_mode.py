"""Delegated payment in Stripe mode: the official SDK against localstripe as far as it reaches (the
token as a payment method: a paid and a declined charge, one PaymentIntent per attempt), and the
request shape for real Stripe's Shared Payment Tokens and 3-D Secure results."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.commerce.payment_stripe import intent_params
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.billing.conftest import localstripe, localstripe_server  # noqa: F401  (the fixtures)
from tests.billing.localstripe import LocalStripe
from tests.commerce.conftest import Shop, assert_valid, payment
from tests.commerce.test_checkout_sessions import error_of
from tests.conftest import BASE_URL, running


@pytest.fixture
async def stripe_shop(settings: Settings, localstripe: LocalStripe) -> AsyncIterator[Shop]:  # noqa: F811
    changes = {
        "webhook_worker": False,
        "billing_provider": "stripe",
        "stripe_api_base": localstripe.url,
        "stripe_api_key": localstripe.api_key,
        "stripe_webhook_secret": "whsec_commerce_test",
    }
    clock = ManualClock(start=time.time())
    app = create_app(Settings(**{**settings.model_dump(), **changes}), clock=clock)
    async with running(app) as app:
        made = await app.state.commerce.platforms.create("Stripe assistant", None)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client:
            yield Shop(app, client, clock, made.credential, made.platform.id, made.signing_secret)


async def intents(stripe: LocalStripe) -> list[dict]:
    auth = (stripe.api_key, "")
    async with httpx.AsyncClient(base_url=stripe.url, auth=auth) as provider:
        listed = (await provider.get("/v1/payment_intents", params={"limit": 100})).json()["data"]
    return [i for i in listed if "acp_reference" in (i.get("metadata") or {})]


async def test_localstripe_charges_the_token_once_and_declines_a_bad_one(
    stripe_shop: Shop,
    localstripe: LocalStripe,  # noqa: F811
) -> None:
    session = await stripe_shop.create()
    handler = session["capabilities"]["payment"]["handlers"][0]
    assert handler["psp"] == "stripe" and handler["id"] == "card_tokenized"
    path = f"/checkout_sessions/{session['id']}/complete"
    declined = await stripe_shop.post(path, payment("pm_card_chargeCustomerFail"))
    error_of(declined, 402, "payment_declined")
    paid = await stripe_shop.post(path, payment("pm_card_visa"))
    assert paid.status_code == 200, paid.text
    assert_valid("CheckoutSessionWithOrder", paid.json())
    charged = [i for i in await intents(localstripe) if i["status"] == "succeeded"]
    assert len(charged) == 1
    assert charged[0]["amount"] == paid.json()["totals"][-1]["amount"] and charged[0]["currency"] == "eur"
    [order] = await stripe_shop.app.state.commerce.orders.recent(10)
    assert order.payment_provider == "stripe" and order.payment_ref == charged[0]["id"]


def test_real_stripe_gets_the_shared_payment_token_and_the_3ds_result() -> None:
    result = {
        "outcome": "authenticated",
        "outcome_details": {
            "three_ds_cryptogram": "ABCDEFGHIJKLMNOPQRSTUVWX==",
            "electronic_commerce_indicator": "05",
            "transaction_id": "dsTransId_12345",
            "version": "2.2.0",
        },
    }
    params = intent_params("spt_123", 69000, "eur", "cs_1:2", result, compatible=False)
    assert params["shared_payment_granted_token"] == "spt_123" and params["confirm"] is True
    assert "payment_method" not in params and params["metadata"] == {"acp_reference": "cs_1:2"}
    assert params["payment_method_options"]["card"]["three_d_secure"] == {
        "cryptogram": "ABCDEFGHIJKLMNOPQRSTUVWX==",
        "electronic_commerce_indicator": "05",
        "transaction_id": "dsTransId_12345",
        "version": "2.2.0",
    }
    assert (
        intent_params("pm_card_visa", 1, "eur", "r", None, compatible=True)["payment_method"]
        == "pm_card_visa"
    )
