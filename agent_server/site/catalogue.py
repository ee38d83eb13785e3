"""Catalogue documents and site metadata, built from the content pack (docs/public-api.md)."""

from __future__ import annotations

from typing import Any, Literal

from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import ContentPack
from agent_server.site.leads import API_PATH as CALL_API_PATH
from agent_server.site.leads import PAGE_PATH as CALL_PAGE_PATH
from agent_server.site.leads import form_fields

CatalogueName = Literal["consulting", "training", "hardware"]
CHECKOUT_PATH = "/api/checkout.php"
CATALOGUE_PATHS = {
    "consulting": "/api/consulting.json",
    "training": "/api/training.json",
    "hardware": "/api/hardware.json",
    "discovery_call": "/api/discovery-call.json",
}
DISCOVERY_DOCUMENTS = [
    "/openapi.json",
    "/.well-known/mcp/manifest.json",
    "/.well-known/mcp.json",
    "/.well-known/api-catalog",
    "/.well-known/agent-card.json",
    "/.well-known/agent-skills/index.json",
    "/.well-known/agent.json",
    "/AGENTS.md",
]
DEFAULT_HEADER_PREFIX = "X-Platform-"  # the contract's spelling; settings.header_prefix maps it
ENDPOINTS = [
    ("ask", "POST", "/api/ask.php", "Ask a question; SSE with Prefer: streaming."),
    ("ask_describe", "GET", "/api/ask.php", "How to call ask: schema, examples, streaming."),
    ("chat_token", "GET", "/api/chat-completion.php?action=token", "Ephemeral chat token (send Origin)."),
    ("chat", "POST", "/api/chat-completion.php", "Chat proxy (X-Platform-Token + session_token)."),
    ("mcp", "POST", "/api/mcp.php", "MCP JSON-RPC (2025-06-18)."),
    ("tools", "GET", "/api/tools.php", "Tool definitions; ?dialect=openai|anthropic|gemini."),
    ("tool_call", "POST", "/api/tools/call", "Run a tool directly."),
    ("capabilities", "GET", "/api/capabilities.php", "Every capability of the service."),
    ("jobs", "POST", "/api/jobs.php", "Start an async job (ask, faq_lookup, kb_refresh)."),
    ("job", "GET", "/api/jobs/{id}", "Poll a job; POST /api/jobs/{id}/cancel or DELETE cancels."),
    ("checkout", "POST", CHECKOUT_PATH, "Buy a fixed-fee consulting package or a training seat."),
    ("subscribe", "POST", "/api/subscribe.php", "Newsletter or waitlist; a link is mailed to confirm."),
    ("discovery_call", "POST", CALL_API_PATH, "Request the free discovery call; we answer by e-mail."),
    ("status", "GET", "/api/status.php", "Health (application/health+json)."),
]


def purchasable(pack: ContentPack) -> dict[str, tuple[str, str, float, str]]:
    """item_id -> (kind, name, unit price, currency) of what checkout sells: fixed-fee consulting
    packages and training seats. Hardware and open-scope consulting are quoted after a call."""
    items = {c.id: ("consulting", c.name, c.price, c.currency) for c in pack.consulting if c.fixed_fee}
    items.update({t.id: ("training", t.name, t.price, t.currency) for t in pack.training})
    return items


def catalogue(pack: ContentPack, name: CatalogueName, revision: int, base_url: str) -> dict[str, Any]:
    sellable = purchasable(pack)
    units = {"consulting": "per package (excl. VAT)", "training": "per participant (excl. VAT)"}
    entries = {"consulting": pack.consulting, "training": pack.training, "hardware": pack.hardware}[name]
    items = []
    for entry in entries:
        item = entry.model_dump(mode="json")
        item["price_unit"] = units.get(name, "per unit (excl. VAT), quoted after a discovery call")
        item["purchasable"] = entry.id in sellable
        if item["purchasable"]:
            item["checkout"] = {
                "method": "POST",
                "url": base_url + CHECKOUT_PATH,
                "body": {"item_id": entry.id},
            }
        items.append(item)
    return {
        "catalogue": name,
        "revision": revision,
        "count": len(items),
        "items": items,
        "links": {
            "checkout": base_url + CHECKOUT_PATH,
            "discovery_call": base_url + CATALOGUE_PATHS["discovery_call"],
        },
    }


def discovery_call(pack: ContentPack, revision: int, base_url: str) -> dict[str, Any]:
    """The call, and how to book it on this site: the page's form for people, the same fields as JSON
    for agents (``booking``); ``booking_url`` is the page."""
    fields = form_fields(pack)
    return {
        **pack.discovery_call.model_dump(mode="json"),
        "booking_url": base_url + CALL_PAGE_PATH,
        "booking": {
            "form": {
                "url": base_url + CALL_PAGE_PATH,
                "method": "POST",
                "enctype": "application/x-www-form-urlencoded",
                "fields": fields,
            },
            "api": {"url": base_url + CALL_API_PATH, "method": "POST", "content_type": "application/json"},
            "answer": "A confirmation by e-mail; the team answers with times within one working day.",
        },
        "revision": revision,
        "links": {"book": base_url + CALL_PAGE_PATH, "site_meta": base_url + "/api/site-meta.json"},
    }


def _named(text: str, settings: Settings) -> str:
    return text.replace(DEFAULT_HEADER_PREFIX, settings.header_prefix)


def site_meta(
    pack: ContentPack, settings: Settings, revision: int, api_version: str, limits: dict[str, Any]
) -> dict[str, Any]:
    """Agent-readable metadata of the site: who, what, where to call, limits."""
    base = settings.public_base_url.rstrip("/")
    company = pack.company
    return {
        "name": company.name,
        "legal_name": company.legal_name,
        "tagline": company.tagline,
        "description": company.description,
        "url": base,
        "languages": company.languages,
        "contact": company.contact.model_dump(),
        "api_version": api_version,
        "nlweb_version": "0.1",
        "content_revision": revision,
        "endpoints": [
            {"name": n, "method": m, "url": base + p, "description": _named(d, settings)}
            for n, m, p, d in ENDPOINTS
        ],
        "catalogues": {name: base + path for name, path in CATALOGUE_PATHS.items()},
        "discovery": [base + path for path in DISCOVERY_DOCUMENTS],
        "limits": {
            **limits,
            "job_ttl_seconds": settings.job_ttl_seconds,
            "idempotency_window_seconds": settings.idempotency_ttl_seconds,
        },
        "documentation": base + "/docs",
    }
