"""The product feed of ACP 2026-04-17 (``Product`` / ``Variant`` of its feed schema): what checkout
sessions sell, one product per catalogue entry with one variant, at the people's checkout's prices.
Served read-only as the feed API's ``GET /feeds/{id}/products`` for the one feed ``catalogue``."""

from __future__ import annotations

from typing import Any

from agent_server.commerce.offer import Offer
from agent_server.knowledge.pack import ContentPack

FEED_ID = "catalogue"
FEED_PATH = f"/agentic_commerce/feeds/{FEED_ID}"


def products(pack: ContentPack, base_url: str) -> dict[str, Any]:
    offer = Offer(pack)
    summaries = {e.id: e.summary for e in (*pack.consulting, *pack.training, *pack.hardware)}
    found = []
    for priced in offer.items.values():
        page = f"{base_url}/catalogue#{priced.id}"
        found.append(
            {
                "id": priced.id,
                "title": priced.name,
                "url": page,
                "variants": [
                    {
                        "id": priced.id,
                        "title": priced.name,
                        "description": {"plain": summaries.get(priced.id, priced.name)},
                        "url": page,
                        "price": {"amount": priced.unit_minor, "currency": priced.currency},
                        "availability": {"available": True, "status": "in_stock"},
                        "categories": [{"value": priced.kind, "taxonomy": "merchant"}],
                    }
                ],
            }
        )
    return {"products": found}


def feed_metadata() -> dict[str, Any]:
    """The feed follows the content pack as it is now; it has no stored revision time."""
    return {"id": FEED_ID}
