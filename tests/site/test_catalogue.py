"""Catalogues, site metadata, checkout and subscribe: the bodies docs/public-api.md defines."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI

from agent_server.site.tables import OrderRecord, SubscriptionRecord
from tests.conftest import BASE_URL
from tests.site.conftest import assert_envelope, count_rows, site_of


async def test_catalogues_list_items_with_prices_and_checkout_links(
    web: httpx.AsyncClient, site_app: FastAPI
) -> None:
    for name in ("consulting", "training", "hardware"):
        response = await web.get(f"/api/{name}.json")
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
        document = response.json()
        pack = site_of(site_app).services.knowledge.pack
        entries = {"consulting": pack.consulting, "training": pack.training, "hardware": pack.hardware}[name]
        assert document["catalogue"] == name and document["count"] == len(entries) == len(document["items"])
        assert document["revision"] == 1 and document["links"]["checkout"] == f"{BASE_URL}/api/checkout.php"
        for item, entry in zip(document["items"], entries, strict=True):
            assert (
                item["id"] == entry.id and item["price"] == entry.price and item["currency"] == entry.currency
            )
            expected = name == "training" or (name == "consulting" and entry.fixed_fee)
            assert item["purchasable"] is expected
            assert ("checkout" in item) is expected
            if expected:
                assert item["checkout"]["body"] == {"item_id": entry.id}


async def test_catalogues_are_cacheable(web: httpx.AsyncClient) -> None:
    first = await web.get("/api/training.json")
    assert first.headers["cache-control"] == "public, max-age=300"
    cached = await web.get("/api/training.json", headers={"If-None-Match": first.headers["etag"]})
    assert cached.status_code == 304 and cached.content == b""


async def test_discovery_call_and_site_meta(web: httpx.AsyncClient) -> None:
    call = (await web.get("/api/discovery-call.json")).json()
    assert (
        call["duration_minutes"] == 30 and call["price"] == 0 and call["links"]["book"] == call["booking_url"]
    )
    meta = (await web.get("/api/site-meta.json")).json()
    assert meta["name"] and meta["url"] == BASE_URL and meta["api_version"] == "2026-05-18"
    assert {e["name"] for e in meta["endpoints"]} >= {
        "ask",
        "chat",
        "jobs",
        "checkout",
        "subscribe",
        "status",
    }
    assert meta["limits"]["chat"] == {"policy": "chat", "requests": 20, "window_seconds": 3600}
    assert meta["limits"]["ask"]["policy"] == "default" and meta["limits"]["job_ttl_seconds"] == 1800
    assert f"{BASE_URL}/.well-known/api-catalog" in meta["discovery"]
    assert (await web.get("/", params={"mode": "agent"})).json() == meta
    assert (await web.get("/")).json()["for_agents"] == f"{BASE_URL}/?mode=agent"


@pytest.mark.parametrize("backend", ["memory", "production"], indirect=True)
async def test_checkout_of_a_fixed_fee_package(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    response = await web.post(
        "/api/checkout.php",
        json={"item_id": "agent-architecture-review", "email": "Buyer@Example.com", "name": "ACME"},
    )
    assert response.status_code == 201, response.text
    order = response.json()
    assert order["order_id"].startswith("ord_") and order["status"] == "pending" and order["sandbox"] is True
    assert order["amount"] == "3500.00" and order["amount_minor"] == 350_000 and order["currency"] == "EUR"
    assert order["item"] == {
        "kind": "consulting",
        "id": "agent-architecture-review",
        "name": "Agent Architecture Review",
    }
    assert order["checkout_url"].startswith(f"{BASE_URL}/billing_provider/sandbox/checkout/cs_sbx_")
    assert "email" not in order
    status = await web.get("/api/checkout.php", params={"order_id": order["order_id"]})
    assert status.json() == order
    assert await count_rows(site_app, OrderRecord) == 1
    assert response.headers["RateLimit-Limit"] == "20;w=3600"


async def test_checkout_of_training_seats(web: httpx.AsyncClient) -> None:
    order = (
        await web.post(
            "/api/checkout.php",
            json={"item_id": "agent-engineering-fundamentals", "quantity": 3, "email": "a@example.com"},
        )
    ).json()
    assert order["item"]["kind"] == "training" and order["quantity"] == 3
    assert order["unit_amount"] == "690.00" and order["amount"] == "2070.00"


async def test_checkout_refuses_what_is_not_sold_online(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    def post(**body):
        return web.post("/api/checkout.php", json={"email": "a@example.com", **body})

    assert (
        "discovery call"
        in assert_envelope(await post(item_id="edge-inference-node"), 400, "NOT_PURCHASABLE")["message"]
    )
    assert_envelope(await post(item_id="custom-agent-development"), 400, "NOT_PURCHASABLE")
    assert assert_envelope(await post(item_id="nope"), 400, "UNKNOWN_ITEM")["param"] == "item_id"
    assert (
        assert_envelope(await post(item_id="ai-readiness-assessment", quantity=2), 400, "VALIDATION_ERROR")[
            "param"
        ]
        == "quantity"
    )
    bad_email = await web.post(
        "/api/checkout.php", json={"item_id": "ai-readiness-assessment", "email": "not-an-email"}
    )
    assert assert_envelope(bad_email, 400, "VALIDATION_ERROR")["param"] == "email"
    assert_envelope(await web.get("/api/checkout.php", params={"order_id": "ord_nope"}), 404, "NOT_FOUND")
    assert await count_rows(site_app, OrderRecord) == 0


@pytest.mark.parametrize("backend", ["memory", "production"], indirect=True)
async def test_subscribing_twice_returns_the_same_subscription(
    web: httpx.AsyncClient, site_app: FastAPI
) -> None:
    first = await web.post("/api/subscribe.php", json={"email": "Reader@Example.com"})
    assert first.status_code == 201
    subscription = first.json()
    assert subscription["subscription_id"].startswith("sub_") and subscription["list"] == "newsletter"
    # pending until the link mailed to the address is followed (double opt-in, tests/site/test_opt_in.py)
    assert subscription["email"] == "reader@example.com" and subscription["status"] == "pending"
    again = await web.post("/api/subscribe.php", json={"email": "reader@example.COM"})
    assert again.status_code == 200 and again.json() == subscription
    waitlist = await web.post("/api/subscribe.php", json={"email": "reader@example.com", "list": "waitlist"})
    assert (
        waitlist.status_code == 201 and waitlist.json()["subscription_id"] != subscription["subscription_id"]
    )
    assert await count_rows(site_app, SubscriptionRecord) == 2
    assert (
        assert_envelope(
            await web.post("/api/subscribe.php", json={"email": "nope"}), 400, "VALIDATION_ERROR"
        )["param"]
        == "email"
    )
    assert_envelope(
        await web.post("/api/subscribe.php", json={"email": "a@example.com", "list": "spam"}),
        400,
        "VALIDATION_ERROR",
    )


async def test_forms_are_limited_per_ip(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    for number in range(20):
        response = await web.post("/api/subscribe.php", json={"email": f"r{number}@example.com"})
        assert response.status_code == 201
    assert_envelope(
        await web.post("/api/subscribe.php", json={"email": "late@example.com"}), 429, "RATE_LIMIT_EXCEEDED"
    )
    assert_envelope(
        await web.post(
            "/api/checkout.php", json={"item_id": "agent-architecture-review", "email": "a@example.com"}
        ),
        429,
        "RATE_LIMIT_EXCEEDED",
    )


async def test_unknown_api_paths_are_json_404(web: httpx.AsyncClient) -> None:
    assert_envelope(await web.get("/api/nothing.json"), 404, "ENDPOINT_NOT_FOUND")


@pytest.mark.parametrize("backend", ["memory", "production"], indirect=True)
async def test_concurrent_first_subscriptions_make_one_row(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    responses = await asyncio.gather(
        *(web.post("/api/subscribe.php", json={"email": "race@example.com"}) for _ in range(10))
    )
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201]
    assert len({r.json()["subscription_id"] for r in responses}) == 1
    assert await count_rows(site_app, SubscriptionRecord) == 1
