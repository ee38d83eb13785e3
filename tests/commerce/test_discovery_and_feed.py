"""``/.well-known/acp.json`` per the discovery RFC (schema ``DiscoveryResponse``) and the product feed
(the feed schema's ``ProductsResponse``), linked from the API catalog and AGENTS.md."""

from __future__ import annotations

import json
from functools import cache

from jsonschema import Draft202012Validator, FormatChecker

from tests.commerce.conftest import SPEC, TRAINING, Shop, assert_valid


@cache
def feed_bundle() -> dict:
    return json.loads((SPEC / "json-schema" / "schema.feed.json").read_text())


def assert_feed(name: str, body: object) -> None:
    schema = {"$ref": f"#/$defs/{name}", "$defs": feed_bundle()["$defs"]}
    errors = list(Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(body))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


async def test_the_discovery_document_describes_what_is_served(shop: Shop) -> None:
    answer = await shop.client.get("/.well-known/acp.json")  # no credential: public
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    assert "max-age=3600" in answer.headers["cache-control"]
    doc = answer.json()
    assert_valid("DiscoveryResponse", doc)
    assert doc["protocol"]["version"] == "2026-04-17" and doc["transports"] == ["rest", "mcp"]
    assert doc["capabilities"]["supported_currencies"] == ["eur"]
    base = doc["api_base_url"].removeprefix("http://127.0.0.1:8000")
    created = await shop.post(
        "/checkout_sessions", {"currency": "eur", "line_items": [{"id": TRAINING}], "capabilities": {}}
    )
    assert created.status_code == 201 and base == "/agentic_commerce"


async def test_the_feed_lists_what_sessions_sell_at_their_prices(shop: Shop) -> None:
    answer = await shop.client.get("/agentic_commerce/feeds/catalogue/products")
    assert answer.status_code == 200
    feed = answer.json()
    assert_feed("ProductsResponse", feed)
    assert_feed("FeedMetadata", (await shop.client.get("/agentic_commerce/feeds/catalogue")).json())
    products = {p["id"]: p for p in feed["products"]}
    assert "edge-inference-node" in products and "custom-agent-development" not in products  # quoted
    session = await shop.create(*products)
    for line in session["line_items"]:
        price = products[line["product_id"]]["variants"][0]["price"]
        assert (price["amount"], price["currency"]) == (line["unit_amount"], "EUR")


async def test_the_api_catalog_agents_md_and_the_mcp_card_link_them(shop: Shop) -> None:
    catalog = (await shop.client.get("/.well-known/api-catalog")).json()
    acp = next(entry for entry in catalog["linkset"] if entry["anchor"].endswith("/agentic_commerce"))
    assert acp["service-desc"][0]["href"].endswith("/.well-known/acp.json")
    for link in (acp["service-desc"][0]["href"], acp["item"][0]["href"]):
        assert (await shop.client.get(link)).status_code == 200
    agents = (await shop.client.get("/AGENTS.md")).text
    assert "/.well-known/acp.json" in agents and "/agentic_commerce/feeds/catalogue/products" in agents
    card = (await shop.client.get("/.well-known/mcp.json")).json()
    discovery = card["_meta"]["dev.agenticcommerce/discovery"]
    assert (
        discovery.endswith("/.well-known/acp.json") and (await shop.client.get(discovery)).status_code == 200
    )
