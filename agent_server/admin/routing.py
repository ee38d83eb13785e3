"""Editing the LLM routing table (agent_server/llm) with optimistic concurrency.

Every write names the revision it was based on; the revision row is bumped with a
compare-and-set (``UPDATE ... WHERE revision = :expected``), so of two admins editing the same
revision one wins and the other gets 409 instead of silently overwriting. Every process's router
re-reads the table when the revision changes (at most ``llm_routing_check_seconds`` later).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import update

from agent_server.capabilities.services import Services
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, ValidationFailed
from agent_server.foundation.settings_llm import RouteEntry
from agent_server.llm.router import Router
from agent_server.llm.routing import RoutingTable, seed_routes
from agent_server.llm.store import read_table, replace_rows, write_table
from agent_server.llm.tables import STATE_ROW_ID, LLMRoutingState
from agent_server.webhooks.repository import utc

MAX_MODELS, MAX_ENTRIES = 500, 20


def etag(revision: int) -> str:
    return f'"rev-{revision}"'


def parse_revision(if_match: str | None, body_revision: int | None) -> int | None:
    """The expected revision from ``If-Match: "rev-N"`` (wins) or the body's ``revision``."""
    if if_match:
        value = if_match.strip().removeprefix("W/").strip('"').removeprefix("rev-")
        if not value.isdigit():
            raise ValidationFailed(
                'If-Match must be the ETag of GET /admin/llm-routing/ ("rev-N").', param="If-Match"
            )
        return int(value)
    return body_revision


def router_of(services: Services) -> Router:
    if not isinstance(services.llm, Router):
        raise ValidationFailed("This deployment's LLM backend has no routing table.")
    return services.llm


def validate(routes: Mapping[str, Any], backends: Sequence[str]) -> dict[str, list[RouteEntry]]:
    """Known backends, weights > 0, at least one backend per model, no duplicate backend in a model."""
    if len(routes) > MAX_MODELS:
        raise ValidationFailed(f"At most {MAX_MODELS} models.", param="routes")
    clean: dict[str, list[RouteEntry]] = {}
    for model, entries in routes.items():
        where = f"routes.{model}"
        if not model or len(model) > 200:
            raise ValidationFailed("Model ids have 1 to 200 characters.", param=where)
        if not isinstance(entries, list) or not entries or len(entries) > MAX_ENTRIES:
            raise ValidationFailed(f"A model needs 1 to {MAX_ENTRIES} backends.", param=where)
        parsed = []
        for index, raw in enumerate(entries):
            try:
                entry = RouteEntry.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"])
                raise ValidationFailed(f"{first['msg']}.", param=f"{where}.{index}.{field}") from None
            if entry.backend not in backends:
                known = ", ".join(sorted(backends))
                raise ValidationFailed(
                    f"Unknown backend '{entry.backend}'; known: {known}.", param=f"{where}.{index}"
                )
            if entry.weight <= 0:
                raise ValidationFailed("Weights must be greater than 0.", param=f"{where}.{index}.weight")
            parsed.append(entry)
        if len({e.backend for e in parsed}) != len(parsed):
            raise ValidationFailed("A backend appears twice in one model's route.", param=where)
        clean[model] = parsed
    return clean


def table_view(table: RoutingTable, backends: Sequence[str]) -> dict[str, Any]:
    return {
        "object": "llm_routing",
        "revision": table.revision,
        "backends": sorted(backends),
        "routes": {
            model: [e.model_dump() for e in entries] for model, entries in sorted(table.as_entries().items())
        },
    }


async def _write_if(
    services: Services, expected: int, routes: Mapping[str, Sequence[RouteEntry]], source: str
) -> int:
    clock: Clock = services.clock
    async with services.db.session() as session:
        bumped = await session.execute(
            update(LLMRoutingState)
            .where(LLMRoutingState.id == STATE_ROW_ID, LLMRoutingState.revision == expected)  # type: ignore[arg-type]
            .values(revision=expected + 1, updated_at=utc(clock.now()), source=source)
        )
        if bumped.rowcount != 1:
            raise Conflict(
                f"The routing table is no longer at revision {expected}; GET it again and retry.",
                code="revision_mismatch",
                param="If-Match",
            )
        await replace_rows(session, routes, expected + 1)
    return expected + 1


async def current(services: Services) -> RoutingTable:
    router = router_of(services)
    await router.table()  # seeds the table on a fresh database
    return await read_table(services.db) or await router.refresh()


async def patch(services: Services, changes: Mapping[str, Any], expected: int | None) -> RoutingTable:
    """Replace the named models' routes (``null`` removes a model); needs the current revision."""
    if expected is None:
        raise ValidationFailed(
            'Send If-Match: "rev-N" (the ETag of GET /admin/llm-routing/) or a body revision.',
            param="If-Match",
        )
    router = router_of(services)
    table = await current(services)
    removed = [model for model, entries in changes.items() if entries is None]
    updates = validate({m: e for m, e in changes.items() if e is not None}, list(router.backends))
    merged = {m: e for m, e in table.as_entries().items() if m not in removed}
    merged.update(updates)
    if not merged:
        raise ValidationFailed("The routing table cannot be empty; DELETE resets it.", param="routes")
    await _write_if(services, expected, merged, "admin")
    return await router.refresh()


async def reset(services: Services, expected: int | None) -> RoutingTable:
    """Back to the table the settings describe (the seeded default)."""
    router = router_of(services)
    settings = services.settings
    catalogue = [(m.id, m.vendor) for m in services.knowledge.pack.models]
    seed = seed_routes(settings.upstreams, settings.routes, catalogue, settings.sandbox)
    if expected is None:
        await current(services)
        await write_table(services.db, seed, source="settings")
    else:
        await _write_if(services, expected, seed, "settings")
    return await router.refresh()
