"""``sync-models``: push the plans' and the models' prices to the provider's products and prices.

Each price is found by its lookup key (``plan:<id>:month``, ``model:<id>:input_mtok``...) and created
only when missing or changed, so a second run creates nothing. Prices are integer minor units from
the content pack (pricebook.py); model prices are per million tokens.
"""

from __future__ import annotations

from typing import Any

from agent_server.billing.port import BillingProvider
from agent_server.billing.pricebook import PriceBook


async def sync_models(provider: BillingProvider, book: PriceBook) -> dict[str, Any]:
    created: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for price in book.sync_prices():
        ref = await provider.ensure_price(price)
        entry = {
            "lookup_key": price.lookup_key,
            "provider_id": ref.id,
            "product_name": price.product_name,
            "amount_minor": price.amount_minor,
            "currency": price.currency,
            "interval": price.interval,
        }
        (created if ref.created else kept).append(entry)
    return {"object": "price_sync", "provider": provider.name, "created": created, "kept": kept}
