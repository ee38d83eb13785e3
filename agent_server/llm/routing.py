"""Which backends serve a model, in which order: the routing table and its seed from settings.

Order of attempts for one request (docs/llm-routing.md):
1. Entries are grouped by ``priority`` (lowest first); inside a group they keep their list order.
2. The first attempt is a weighted random choice inside the first group (weight 0 is never picked
   first; if every weight of the group is 0, the first entry is).
3. Then the rest of the first group in list order, then every later group in list order.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from agent_server.foundation.settings_llm import MOCK_BACKEND, RouteEntry, UpstreamConfig

# Catalogue models of this vendor are the built-in mock models: always routable to the mock.
MOCK_VENDOR = "agentgate"


@dataclass(frozen=True)
class Route:
    """One model's entries, with the weighted pick precomputed so ``order`` is cheap per request."""

    entries: tuple[RouteEntry, ...]
    _first: tuple[RouteEntry, ...] = field(init=False, repr=False)
    _rest: tuple[RouteEntry, ...] = field(init=False, repr=False)
    _cumulative: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        ranked = sorted(self.entries, key=lambda e: e.priority)  # stable: list order inside a group
        top = ranked[0].priority if ranked else 0
        first = tuple(e for e in ranked if e.priority == top)
        object.__setattr__(self, "_first", first)
        object.__setattr__(self, "_rest", tuple(e for e in ranked if e.priority != top))
        object.__setattr__(self, "_cumulative", tuple(accumulate(e.weight for e in first)))

    def order(self, rng: random.Random) -> list[RouteEntry]:
        """The backends to try for one request, first to last."""
        first = self._first
        if len(first) <= 1:
            return [*first, *self._rest]
        total = self._cumulative[-1]
        pick = 0 if total <= 0 else min(bisect_right(self._cumulative, rng.random() * total), len(first) - 1)
        return [first[pick], *first[:pick], *first[pick + 1 :], *self._rest]


@dataclass(frozen=True)
class RoutingTable:
    """An immutable snapshot; the router swaps the whole object when the revision changes."""

    revision: int
    routes: Mapping[str, Route]

    @classmethod
    def build(cls, revision: int, routes: Mapping[str, Sequence[RouteEntry]]) -> RoutingTable:
        return cls(revision, {model: Route(tuple(entries)) for model, entries in routes.items() if entries})

    def as_entries(self) -> dict[str, list[RouteEntry]]:
        return {model: list(route.entries) for model, route in self.routes.items()}


def seed_routes(
    upstreams: Sequence[UpstreamConfig],
    explicit: Mapping[str, Sequence[RouteEntry]] | None,
    catalogue: Iterable[tuple[str, str]],
    sandbox: bool,
) -> dict[str, list[RouteEntry]]:
    """The routing table settings describe, written to the database when it holds none.

    ``explicit`` (AGENTGATE_ROUTES) wins. Without it, each public model of each upstream routes to
    that upstream; a model offered by several upstreams falls back in their configured order. In
    sandbox mode without upstreams, every catalogue model routes to the mock. The mock models of
    the catalogue route to the mock in any mode unless routed otherwise (the ask tool uses one).
    """
    catalogue = list(catalogue)
    routes: dict[str, list[RouteEntry]] = {}
    if explicit is not None:
        routes = {model: list(entries) for model, entries in explicit.items() if entries}
    else:
        for upstream in upstreams:
            for public in upstream.models:
                entries = routes.setdefault(public, [])
                entries.append(RouteEntry(backend=upstream.name, priority=len(entries)))
        if not upstreams and sandbox:
            routes = {model: [RouteEntry(backend=MOCK_BACKEND)] for model, _ in catalogue}
    for model, vendor in catalogue:
        if vendor == MOCK_VENDOR:
            routes.setdefault(model, [RouteEntry(backend=MOCK_BACKEND)])
    return routes


def same_routes(a: Mapping[str, Sequence[RouteEntry]], b: Mapping[str, Sequence[RouteEntry]]) -> bool:
    return {k: list(v) for k, v in a.items() if v} == {k: list(v) for k, v in b.items() if v}
