"""The attempt order of a route and the table seeded from settings (pure, no I/O)."""

from __future__ import annotations

import random
from collections import Counter

from agent_server.foundation.settings_llm import RouteEntry, UpstreamConfig
from agent_server.llm.routing import Route, seed_routes

CATALOGUE = [
    ("agentgate-mock-small", "agentgate"),
    ("agentgate-mock-large", "agentgate"),
    ("gpt-4o", "OpenAI"),
]


def names(entries: list[RouteEntry]) -> list[str]:
    return [e.backend for e in entries]


def test_weights_decide_the_first_attempt_statistically() -> None:
    route = Route(
        (
            RouteEntry(backend="a", weight=3),
            RouteEntry(backend="b", weight=1),
            RouteEntry(backend="c", priority=1),
        )
    )
    rng = random.Random(1234)
    draws = 20_000
    firsts = Counter(route.order(rng)[0].backend for _ in range(draws))
    assert set(firsts) == {"a", "b"}  # the fallback group is never first
    assert abs(firsts["a"] / draws - 0.75) < 0.015
    # the rest of the group follows, then the later groups, each in list order
    orders = {tuple(names(route.order(rng))) for _ in range(200)}
    assert orders == {("a", "b", "c"), ("b", "a", "c")}


def test_zero_weight_is_fallback_only_and_priorities_order_groups() -> None:
    route = Route(
        (
            RouteEntry(backend="late", priority=2),
            RouteEntry(backend="spare", weight=0),
            RouteEntry(backend="main", weight=1),
            RouteEntry(backend="middle", priority=1),
        )
    )
    rng = random.Random(7)
    assert {tuple(names(route.order(rng))) for _ in range(100)} == {("main", "spare", "middle", "late")}
    all_zero = Route((RouteEntry(backend="x", weight=0), RouteEntry(backend="y", weight=0)))
    assert names(all_zero.order(rng)) == ["x", "y"]


def test_seed_routes_each_upstream_model_to_its_upstreams_in_config_order() -> None:
    one = UpstreamConfig(name="one", base_url="http://one/v1", models={"gpt-4o": "gpt-4o-2024", "m1": "m1"})
    two = UpstreamConfig(name="two", base_url="http://two/v1", models=["gpt-4o"])
    routes = seed_routes([one, two], None, CATALOGUE, sandbox=False)
    assert routes["gpt-4o"] == [RouteEntry(backend="one"), RouteEntry(backend="two", priority=1)]
    assert routes["m1"] == [RouteEntry(backend="one")]
    # the mock models stay routable (the ask tool uses one) in any mode
    assert routes["agentgate-mock-small"] == [RouteEntry(backend="mock")]
    assert sorted(routes) == ["agentgate-mock-large", "agentgate-mock-small", "gpt-4o", "m1"]


def test_seed_routes_in_sandbox_without_upstreams_sends_the_whole_catalogue_to_the_mock() -> None:
    routes = seed_routes([], None, CATALOGUE, sandbox=True)
    assert routes == {model: [RouteEntry(backend="mock")] for model, _ in CATALOGUE}
    assert sorted(seed_routes([], None, CATALOGUE, sandbox=False)) == [
        "agentgate-mock-large",
        "agentgate-mock-small",
    ]


def test_explicit_routes_win() -> None:
    up = UpstreamConfig(name="up", base_url="http://up/v1", models=["gpt-4o"])
    explicit = {"gpt-4o": [RouteEntry(backend="up", weight=2), RouteEntry(backend="mock", weight=1)]}
    routes = seed_routes([up], explicit, CATALOGUE, sandbox=False)
    assert routes["gpt-4o"] == explicit["gpt-4o"]
    assert "agentgate-mock-small" in routes
