"""Fixtures of the billing tests: a real localstripe on loopback, and one app per test parametrised by
payment provider (``provider``: ``sandbox`` or ``stripe``, the official SDK against localstripe).

``billed`` is an app over ASGI with tenants A and B (professional plan, in their trial), a platform
tenant P, their admins' tokens and the provider's payer-side helpers (``pay``): the sandbox's
confirmation page, or on localstripe what the provider's card form would do (confirm the
SetupIntent with the client secret and a publishable key; a PaymentIntent with a test card).
localstripe's events reach the app through ``relay`` (its event list, signed and posted as it
would post them), so ASGI tests need no webhook server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.admin.conftest import USERS, populate
from tests.billing.localstripe import LocalStripe, post_event, webhook_secret
from tests.conftest import BASE_URL, running

SEGMENT = "billing_provider"
NOWHERE = "http://127.0.0.1:9/"  # the discard port: nothing listens, a delivery fails at once
CARDS = {"pays": "4242424242424242", "declined": "4000000000000002", "renewals_fail": "4000000000000341"}
# localstripe's test payment methods: a card that pays; one refused when a SetupIntent attaches it; one
# that attaches but whose charges fail (a declined PaymentIntent).
SETUP_METHODS = {"pays": "pm_card_visa", "declined": "pm_card_visa_chargeDeclined"}
CHARGE_METHODS = {"pays": "pm_card_visa", "declined": "pm_card_chargeCustomerFail"}


@pytest.fixture(scope="session")
def localstripe_server() -> Iterator[LocalStripe]:
    with LocalStripe() as server:
        yield server


@pytest.fixture
def localstripe(localstripe_server: LocalStripe) -> Iterator[LocalStripe]:
    """The session's localstripe, emptied for this test; its webhooks go nowhere until registered."""
    localstripe_server.flush()
    localstripe_server.register_webhook(NOWHERE, "whsec_unused")
    yield localstripe_server
    localstripe_server.register_webhook(NOWHERE, "whsec_unused")


@pytest.fixture(params=["sandbox", "stripe"])
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


def provider_settings(settings: Settings, provider: str, stripe: LocalStripe | None, secret: str) -> Settings:
    changes: dict[str, Any] = {"webhook_worker": False, "billing_provider": provider}
    if stripe is not None:
        changes.update(
            stripe_api_base=stripe.url, stripe_api_key=stripe.api_key, stripe_webhook_secret=secret
        )
    return Settings(**{**settings.model_dump(), **changes})


@dataclass
class Billed:
    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock
    provider: str
    tenants: dict[str, str]
    users: dict[str, str]
    tokens: dict[str, str]
    stripe: LocalStripe | None = None
    secret: str = ""
    relayed: set[str] = field(default_factory=set)

    def advance(self, seconds: float) -> None:
        """Move the clock, and sign the admins in again (their tokens live an hour)."""
        self.clock.advance(seconds)
        for who, (short, permissions) in USERS.items():
            issued = self.app.state.gateway.tokens.issue(self.users[who], self.tenants[short], permissions)
            self.tokens[who] = issued[0]

    def auth(self, who: str = "a_admin") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    async def post(self, path: str, body: dict[str, Any], who: str = "a_admin") -> httpx.Response:
        return await self.client.post(f"/{SEGMENT}/{path}", json=body, headers=self.auth(who))

    async def get(self, path: str, who: str = "a_admin", **params: Any) -> httpx.Response:
        return await self.client.get(f"/{SEGMENT}/{path}", params=params, headers=self.auth(who))

    async def pay(self, checkout: dict[str, Any], card: str = "pays") -> httpx.Response | None:
        """What the payer does on the provider's side; then the provider's events reach the app."""
        if self.stripe is None:
            page = checkout["url"].removeprefix(BASE_URL)
            answer = await self.client.post(page, data={"action": "pay", "card": CARDS[card]})
            return answer
        ref, base = checkout["session_ref"], self.stripe.url
        async with httpx.AsyncClient(base_url=base, timeout=10) as payer:
            if (
                checkout["flow"] == "setup_intent"
            ):  # the provider's card form: publishable key + client secret
                body = {"payment_method": SETUP_METHODS[card], "client_secret": checkout["client_secret"]}
                confirmed = await payer.post(
                    f"/v1/setup_intents/{ref}/confirm", data={**body, "key": "pk_test_x"}
                )
                assert confirmed.status_code in (200, 402), confirmed.text
            else:  # localstripe confirms a PaymentIntent only server-side, with its method set first
                auth = (self.stripe.api_key, "")
                method = {"payment_method": CHARGE_METHODS[card]}
                (await payer.post(f"/v1/payment_intents/{ref}", data=method, auth=auth)).raise_for_status()
                await payer.post(f"/v1/payment_intents/{ref}/confirm", auth=auth)
        await self.relay()
        return None

    async def relay(self) -> list[dict[str, Any]]:
        """Post localstripe's new events to our webhooks route, signed as localstripe signs them."""
        if self.stripe is None:
            return []
        listed = self.stripe.get("/v1/events", limit=100).json()["data"]
        fresh = [e for e in sorted(listed, key=lambda e: e["created"]) if e["id"] not in self.relayed]
        for event in fresh:
            self.relayed.add(event["id"])
            answer = await post_event(self.client, f"/{SEGMENT}/webhooks", event, self.secret)
            assert answer.status_code == 200, answer.text
        return fresh


@pytest.fixture
async def billed(provider: str, settings: Settings, request: pytest.FixtureRequest) -> AsyncIterator[Billed]:
    stripe = request.getfixturevalue("localstripe") if provider == "stripe" else None
    secret = webhook_secret()
    clock = ManualClock(time.time())  # near real time: localstripe stamps its events with its own clock
    application = create_app(provider_settings(settings, provider, stripe, secret), clock=clock)
    async with running(application):
        tenants, users, tokens = await populate(application, clock)
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield Billed(application, client, clock, provider, tenants, users, tokens, stripe, secret)
