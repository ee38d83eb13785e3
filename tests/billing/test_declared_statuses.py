"""Every status a billing route answers is one ``/openapi.json`` declares for it: the second subscribe
(200 beside 201), the sandbox pages' redirects and declined cards, the portal a compatible server
lacks (501) and a provider that cannot be reached (502)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.admin.conftest import populate
from tests.billing.conftest import CARDS, NOWHERE, SEGMENT, Billed, provider_settings
from tests.conftest import BASE_URL, running


def declared(document: dict[str, Any], method: str, path: str) -> set[int]:
    return {int(status) for status in document["paths"][path][method.lower()]["responses"]}


class Seen:
    """The answers of a test, each with the route it came from, checked against the document."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client, self.answers = client, []

    async def __call__(self, method: str, route: str, url: str, **kwargs: Any) -> httpx.Response:
        answer = await self.client.request(method, url, **kwargs)
        self.answers.append((method, route, answer.status_code))
        return answer

    async def undeclared(self) -> list[tuple[str, str, int]]:
        document = (await self.client.get("/openapi.json")).json()
        return [(m, r, s) for m, r, s in self.answers if s not in declared(document, m, r)]


async def test_what_the_billing_routes_answer_is_declared(billed: Billed) -> None:
    seen = Seen(billed.client)
    subscribe = {"email": "reader@example.com", "list": "newsletter"}
    first = await seen("POST", "/api/subscribe.php", "/api/subscribe.php", json=subscribe)
    again = await seen("POST", "/api/subscribe.php", "/api/subscribe.php", json=subscribe)
    assert (first.status_code, again.status_code) == (201, 200)

    auth = billed.auth()
    portal = await seen(
        "POST", f"/{SEGMENT}/billing-portal", f"/{SEGMENT}/billing-portal", json={}, headers=auth
    )
    checkout = await seen(
        "POST",
        f"/{SEGMENT}/create-checkout",
        f"/{SEGMENT}/create-checkout",
        json={"plan_id": "starter"},
        headers=auth,
    )
    assert checkout.status_code == 201
    if billed.stripe is None:  # the sandbox's own pages
        page = checkout.json()["url"].removeprefix(BASE_URL)
        route = f"/{SEGMENT}/sandbox/checkout/{{ref}}"
        declined = await seen("POST", route, page, data={"action": "pay", "card": CARDS["declined"]})
        paid = await seen("POST", route, page, data={"action": "pay", "card": CARDS["pays"]})
        assert (declined.status_code, paid.status_code) == (402, 303)
        portal = await seen(
            "POST", f"/{SEGMENT}/billing-portal", f"/{SEGMENT}/billing-portal", json={}, headers=auth
        )
        path = portal.json()["url"].removeprefix(BASE_URL)
        route = f"/{SEGMENT}/sandbox/portal/{{ref}}"
        unknown = await seen("POST", route, path, data={"action": "pay", "card": "4111111111111111"})
        repaid = await seen("POST", route, path, data={"action": "pay", "card": CARDS["pays"]})
        assert (unknown.status_code, repaid.status_code) == (402, 303)
    else:
        assert portal.status_code == 501  # localstripe has no billing portal
    assert await seen.undeclared() == []


@pytest.mark.parametrize("provider", ["stripe"])
async def test_an_unreachable_provider_is_a_declared_502(settings: Settings, provider: str) -> None:
    clock = ManualClock(1_900_000_000)
    nobody = {"stripe_api_base": NOWHERE.rstrip("/"), "stripe_api_key": "sk_test_x"}
    unreachable = provider_settings(settings, provider, None, "")
    unreachable = Settings(**{**unreachable.model_dump(), **nobody, "stripe_webhook_secret": "whsec_x"})
    application = create_app(unreachable, clock=clock)
    async with running(application):
        _, _, tokens = await populate(application, clock)
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            seen = Seen(client)
            auth = {"Authorization": f"Bearer {tokens['a_admin']}"}
            route = f"/{SEGMENT}/create-checkout"
            answer = await seen("POST", route, route, json={"plan_id": "starter"}, headers=auth)
            assert answer.status_code == 502 and answer.json()["error"]["code"] == "upstream_error"
            assert await seen.undeclared() == []
