"""What a key may call, for ``GET /v1/models`` and ``GET /v1/models/{id}``: exactly the models its
plan grants, its allow-list permits, its scopes reach and that can be served, a BYOK model only
when the tenant has stored its key for the provider. ``Gateway.entitle`` and the routes' scopes
enforce the same rules on calls.

Scopes: an embedding model (capability ``embeddings`` without ``chat``) is called on
``/v1/embeddings``, which needs the ``embeddings`` scope and the plan's ``embeddings`` feature;
every other model is called on the chat routes, which need the ``chat`` scope.

Served means: for a sandbox key, any model the gateway knows (the mock answers every one); for a
live key, the models of the routing table, plus BYOK models whose provider has an upstream.
"""

from __future__ import annotations

from typing import Any

from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.model_table import ModelTable
from agent_server.llm.types import LLMBackend

EMBEDDINGS = "embeddings"


def _route_allowed(principal: KeyPrincipal, model: str, models: ModelTable) -> bool:
    """The key's scopes (and the plan's feature) reach the route this model is called on."""
    entry = models.entries.get(model)
    if entry is not None and EMBEDDINGS in entry.capabilities and "chat" not in entry.capabilities:
        return EMBEDDINGS in principal.scopes and EMBEDDINGS in principal.plan.features
    return "chat" in principal.scopes


def may_call(principal: KeyPrincipal, model: str, models: ModelTable) -> bool:
    if not principal.plan.grant.allows(model) or not _route_allowed(principal, model, models):
        return False
    if principal.models is not None and not principal.models.allows(model):
        return False
    provider = models.byok.get(model)
    return provider is None or provider in principal.byok


async def served(principal: KeyPrincipal, models: ModelTable, router: LLMBackend) -> list[str]:
    """Model ids that can be served to this key: the table's in its order, then routed-only ones."""
    known = list(models.entries)
    if principal.environment == "test":
        return known
    listing = getattr(router, "models", None)  # the router knows its table; a test double may not
    routed = set(await listing()) if listing is not None else set(known)
    byok = {model for model, entry in models.entries.items() if entry.byok_upstream is not None}
    ordered = [model for model in known if model in routed or model in byok]
    return ordered + sorted(routed - set(known))


async def callable_models(
    principal: KeyPrincipal, models: ModelTable, router: LLMBackend
) -> list[dict[str, Any]]:
    return [
        models.object(model)
        for model in await served(principal, models, router)
        if may_call(principal, model, models)
    ]


async def callable_model(
    principal: KeyPrincipal, model: str, models: ModelTable, router: LLMBackend
) -> dict[str, Any] | None:
    if not may_call(principal, model, models) or model not in await served(principal, models, router):
        return None
    return models.object(model)
