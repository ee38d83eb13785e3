from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import tool
from agent_server.knowledge.pack import Company, ContentPack, Model

PricingCategory = Literal["plans", "models", "consulting", "training", "hardware"]


class ModelList(BaseModel):
    models: list[Model]


class PriceItem(BaseModel):
    id: str
    name: str
    price: float | None = Field(description="null when the price is negotiated.")
    currency: str
    unit: str = Field(description="What the price is for, e.g. 'per month' or 'per 1M input tokens'.")
    details: dict[str, str | int | float | bool | None] = {}


class Pricing(BaseModel):
    category: PricingCategory
    items: list[PriceItem]


@tool(title="List models")
async def list_models(
    ctx: ToolContext,
    capability: Annotated[
        Literal["chat", "embeddings", "vision", "tools"] | None,
        Field(description="Only models with this capability; omit for all."),
    ] = None,
) -> ModelList:
    """List the language models the gateway offers, with context window, prices and capabilities."""
    models = ctx.services.knowledge.pack.models
    return ModelList(models=[m for m in models if capability is None or capability in m.capabilities])


@tool(title="Get pricing")
async def get_pricing(
    ctx: ToolContext,
    category: Annotated[
        PricingCategory,
        Field(
            description="plans (gateway subscriptions), models (token prices), consulting, training or hardware."
        ),
    ],
) -> Pricing:
    """Get the price list of one category: gateway plans, model token prices, consulting, training or hardware."""
    return Pricing(category=category, items=price_items(ctx.services.knowledge.pack, category))


def price_items(pack: ContentPack, category: PricingCategory) -> list[PriceItem]:
    """The pricing table is a view over the catalogues, so each price is written once."""
    if category == "plans":
        return [
            PriceItem(
                id=p.id,
                name=p.name,
                price=p.price_monthly,
                currency=p.currency,
                unit="per month",
                details={"requests_per_minute": p.requests_per_minute, "trial_days": p.trial_days},
            )
            for p in pack.plans
        ]
    if category == "models":
        return [
            PriceItem(
                id=m.id,
                name=m.name,
                price=m.input_price_per_mtok,
                currency="EUR",
                unit="per 1M input tokens",
                details={"output_price_per_mtok": m.output_price_per_mtok},
            )
            for m in pack.models
        ]
    if category == "consulting":
        return [
            PriceItem(
                id=c.id,
                name=c.name,
                price=c.price,
                currency=c.currency,
                unit=c.duration,
                details={"fixed_fee": c.fixed_fee},
            )
            for c in pack.consulting
        ]
    if category == "training":
        return [
            PriceItem(
                id=t.id,
                name=t.name,
                price=t.price,
                currency=t.currency,
                unit="per participant",
                details={"format": t.format, "duration_hours": t.duration_hours},
            )
            for t in pack.training
        ]
    return [
        PriceItem(
            id=h.id,
            name=h.name,
            price=h.price,
            currency=h.currency,
            unit="per unit",
            details={"lead_time_weeks": h.lead_time_weeks},
        )
        for h in pack.hardware
    ]


@tool(title="Company information")
async def get_company_info(ctx: ToolContext) -> Company:
    """Get the company's name, description, address, contacts and leadership."""
    return ctx.services.knowledge.pack.company
