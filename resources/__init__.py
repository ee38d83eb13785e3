"""The eight MCP resources of the content pack (spec 2.8), each a view of one part of the pack; with the
resource templates (``templates.py``) and prompts (``prompts.py``) drawn from the same pack."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry, ResourceSpec
from agent_server.knowledge.pack import ContentPack


def _json(pick: Callable[[ContentPack], Any]) -> Callable[[ToolContext], Awaitable[str]]:
    async def read(ctx: ToolContext) -> str:
        value = pick(ctx.services.knowledge.pack)
        return json.dumps(_dump(value), ensure_ascii=False, indent=2)

    return read


def _text(pick: Callable[[ContentPack], str]) -> Callable[[ToolContext], Awaitable[str]]:
    async def read(ctx: ToolContext) -> str:
        return pick(ctx.services.knowledge.pack)

    return read


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def _pricing(pack: ContentPack) -> dict[str, Any]:
    from tools.catalogue import price_items

    categories = ("plans", "models", "consulting", "training", "hardware")
    return {c: [item.model_dump(mode="json") for item in price_items(pack, c)] for c in categories}


RESOURCES = [
    ResourceSpec(
        "kb://core",
        "KB-core",
        "Knowledge base (core)",
        "The essentials: product, authentication, plans and limits, errors, versioning, support.",
        "text/markdown",
        _text(lambda p: p.kb_core),
    ),
    ResourceSpec(
        "kb://full",
        "KB-full",
        "Knowledge base (full)",
        "Everything in KB-core plus architecture, MCP usage, jobs, webhooks, security and a glossary.",
        "text/markdown",
        _text(lambda p: p.kb_full),
    ),
    ResourceSpec(
        "pricing://table",
        "pricing/table",
        "Pricing table",
        "Every price by category: plans, model tokens, consulting, training, hardware.",
        "application/json",
        _json(_pricing),
    ),
    ResourceSpec(
        "faq://catalog",
        "faq/catalog",
        "FAQ catalogue",
        "All frequently asked questions with their answers and tags.",
        "application/json",
        _json(lambda p: p.faq),
    ),
    ResourceSpec(
        "compliance://matrix",
        "compliance/matrix",
        "Compliance matrix",
        "Frameworks (GDPR, EU AI Act, ISO 27001, ...) with status and evidence, and the controls.",
        "application/json",
        _json(lambda p: {"frameworks": p.frameworks, "controls": p.controls}),
    ),
    ResourceSpec(
        "api://catalog",
        "api/catalog",
        "API catalogue",
        "Every public endpoint with method, path, authentication and purpose.",
        "application/json",
        _json(lambda p: p.apis),
    ),
    ResourceSpec(
        "company://info",
        "company/info",
        "Company information",
        "Name, description, address, contacts and leadership.",
        "application/json",
        _json(lambda p: p.company),
    ),
    ResourceSpec(
        "models://catalog",
        "models/catalog",
        "Models catalogue",
        "The language models offered, with prices, context windows and capabilities.",
        "application/json",
        _json(lambda p: p.models),
    ),
]


def register(registry: Registry) -> None:
    from resources import prompts, templates

    for spec in RESOURCES:
        registry.add_resource(spec)
    templates.register(registry)
    prompts.register(registry)
