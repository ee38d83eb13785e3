"""MCP resource templates: one FAQ entry, one pricing category. Their parameter values come from the
pack, so MCP completes them and the content watch can tell which instances changed."""

from __future__ import annotations

import json

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry, TemplateSpec
from agent_server.foundation.errors import NotFound

CATEGORIES = ("plans", "models", "consulting", "training", "hardware")


async def _faq_entry(ctx: ToolContext, variables: dict[str, str]) -> str:
    pack = ctx.services.knowledge.pack
    for entry in pack.faq:
        if entry.id == variables["id"]:
            return json.dumps(entry.model_dump(mode="json"), ensure_ascii=False, indent=2)
    raise NotFound(
        f"Unknown resource 'faq://entry/{variables['id']}': no FAQ entry has that id.", param="uri"
    )


async def _pricing(ctx: ToolContext, variables: dict[str, str]) -> str:
    from tools.catalogue import price_items

    category = variables["category"]
    if category not in CATEGORIES:
        raise NotFound(
            f"Unknown resource 'pricing://table/{category}': categories are {', '.join(CATEGORIES)}.",
            param="uri",
        )
    items = price_items(ctx.services.knowledge.pack, category)  # type: ignore[arg-type]
    body = {"category": category, "items": [item.model_dump(mode="json") for item in items]}
    return json.dumps(body, ensure_ascii=False, indent=2)


TEMPLATES = [
    TemplateSpec(
        "faq://entry/{id}",
        "faq/entry",
        "FAQ entry",
        "One frequently asked question with its answer and tags, by id (see faq://catalog).",
        "application/json",
        _faq_entry,
        {"id": lambda ctx: [e.id for e in ctx.services.knowledge.pack.faq]},
    ),
    TemplateSpec(
        "pricing://table/{category}",
        "pricing/category",
        "Prices of one category",
        "The prices of one category: plans, models, consulting, training or hardware.",
        "application/json",
        _pricing,
        {"category": lambda ctx: list(CATEGORIES)},
    ),
]


def register(registry: Registry) -> None:
    for spec in TEMPLATES:
        registry.add_template(spec)
