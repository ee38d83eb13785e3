"""The forms work without JavaScript: sign-up, checkout and ask use the services of their JSON twins."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.pages.conftest import client_of

CHECKOUT = {
    "item_id": "agent-architecture-review",
    "quantity": "1",
    "email": "Buyer@Example.com",
    "name": "Acme",
}


async def test_the_newsletter_form_creates_the_subscription(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    response = await browser.post(
        "/newsletter", data={"email": "Reader@Example.com", "name": "", "list": "waitlist"}
    )
    assert response.status_code == 200 and "Check your mail." in response.text  # confirmed by a link
    assert "reader@example.com" in response.text and response.headers["cache-control"] == "no-store"
    # The JSON route sees the same row: subscribing there again is the existing subscription.
    again = await program.post("/api/subscribe.php", json={"email": "reader@example.com", "list": "waitlist"})
    assert again.status_code == 200
    assert again.json()["subscription_id"] in response.text
    repeat = await browser.post("/newsletter", data={"email": "reader@example.com", "list": "waitlist"})
    assert "Check your mail." in repeat.text and again.json()["subscription_id"] in repeat.text


async def test_the_checkout_button_starts_an_order_and_shows_it(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    catalogue = (await browser.get("/catalogue/consulting")).text
    assert 'name="item_id" value="agent-architecture-review"' in catalogue
    response = await browser.post("/checkout", data=CHECKOUT)
    assert response.status_code == 303
    location = response.headers["location"]
    order_id = location.removeprefix("/checkout/")
    assert order_id.startswith("ord_")
    order = (await program.get("/api/checkout.php", params={"order_id": order_id})).json()
    assert order["item"]["id"] == "agent-architecture-review" and order["amount"] == "3500.00"
    page = await browser.get(location)
    assert page.status_code == 200 and order_id in page.text and "3,500.00 EUR" in page.text
    assert f'href="{order["checkout_url"]}"' in page.text.replace("&amp;", "&")
    assert "buyer@example.com" not in page.text.lower()  # the order page never shows the address


async def test_training_seats_and_refusals(browser: httpx.AsyncClient) -> None:
    seats = await browser.post(
        "/checkout", data={**CHECKOUT, "item_id": "agent-engineering-fundamentals", "quantity": "3"}
    )
    assert seats.status_code == 303
    quoted = await browser.post("/checkout", data={**CHECKOUT, "item_id": "edge-inference-node"})
    assert quoted.status_code == 400 and "/docs/errors#not_purchasable" in quoted.text
    bad = await browser.post("/checkout", data={**CHECKOUT, "email": "not an address"})
    assert bad.status_code == 400 and "email" in bad.text
    assert bad.headers["content-type"].startswith("text/html")


async def test_forms_count_against_the_forms_limit(pages_app: FastAPI) -> None:
    limit = pages_app.state.site.policies.forms.limit
    async with client_of(pages_app, ip="10.9.9.9", Accept="text/html") as client:
        for number in range(limit):
            response = await client.post("/newsletter", data={"email": f"r{number}@example.com"})
            assert response.status_code == 200
        refused = await client.post("/newsletter", data={"email": "late@example.com"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert "Too many requests" in refused.text and refused.headers["content-type"].startswith("text/html")


async def test_the_ask_form_answers_as_a_page(browser: httpx.AsyncClient) -> None:
    response = await browser.post("/ask", data={"query": "How do I rotate my API key?"})
    assert response.status_code == 200
    assert "90 days" in response.text and "the FAQ" in response.text
    empty = await browser.post("/ask", data={"query": ""})
    assert empty.status_code == 400
