"""faq_lookup ranking, get_pricing per category, get_company_info and list_models."""

from __future__ import annotations

import pytest

from agent_server.capabilities.services import Services
from agent_server.foundation.errors import ValidationFailed
from tests.tools.conftest import Call

# Paraphrases (no copy of the FAQ wording) and the entry that must rank first.
PARAPHRASES = [
    ("I lost my key, can you display it once more?", "api-key-shown-once"),
    ("how frequently should keys be rotated", "api-key-rotation"),
    ("do you offer a trial without giving a card", "free-trial"),
    ("can I use my own OpenAI key for the models", "byok"),
    ("is there single sign-on for my company", "sso"),
    ("where is my data stored", "data-residency"),
    ("how do I check the signature of a webhook delivery", "webhooks"),
    ("how many requests per minute can I send", "rate-limits"),
    ("what certifications do you have", "certifications"),
    ("how much does an on-prem appliance cost", "hardware-pricing"),
    ("my code uses the openai library, do I have to change it", "openai-compatibility"),
]


@pytest.mark.parametrize(("question", "expected"), PARAPHRASES)
async def test_faq_lookup_ranks_the_right_entry_first(call: Call, question: str, expected: str) -> None:
    found = (await call("faq_lookup", {"query": question, "limit": 5})).model_dump()
    results = found["results"]
    assert results and results[0]["id"] == expected, [(r["id"], r["score"]) for r in results]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert len(results) <= 5
    assert results[0]["question"] and results[0]["answer"]


async def test_faq_lookup_respects_the_limit_and_defaults_to_three(call: Call) -> None:
    assert len((await call("faq_lookup", {"query": "api key", "limit": 1})).model_dump()["results"]) == 1
    assert len((await call("faq_lookup", {"query": "api key plans price"})).model_dump()["results"]) == 3


async def test_faq_lookup_without_overlap_returns_nothing(call: Call) -> None:
    found = (await call("faq_lookup", {"query": "zyxxy quorble"})).model_dump()
    assert found == {"query": "zyxxy quorble", "results": []}


@pytest.mark.parametrize(
    ("arguments", "field"), [({"query": ""}, "query"), ({"query": "x", "limit": 11}, "limit")]
)
async def test_faq_lookup_bounds(call: Call, arguments: dict, field: str) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await call("faq_lookup", arguments)
    assert raised.value.param == field


async def test_get_pricing_plans_match_the_plan_catalogue(call: Call, services: Services) -> None:
    pricing = (await call("get_pricing", {"category": "plans"})).model_dump()
    plans = services.knowledge.pack.plans
    assert pricing["category"] == "plans"
    assert [(i["id"], i["price"], i["unit"]) for i in pricing["items"]] == [
        (p.id, p.price_monthly, "per month") for p in plans
    ]
    negotiated = [i for i in pricing["items"] if i["price"] is None]
    assert [i["id"] for i in negotiated] == [p.id for p in plans if p.price_monthly is None]


@pytest.mark.parametrize(
    ("category", "catalogue", "price"),
    [
        ("models", "models", "input_price_per_mtok"),
        ("consulting", "consulting", "price"),
        ("training", "training", "price"),
        ("hardware", "hardware", "price"),
    ],
)
async def test_get_pricing_each_category_lists_its_catalogue(
    call: Call, services: Services, category: str, catalogue: str, price: str
) -> None:
    pricing = (await call("get_pricing", {"category": category})).model_dump()
    entries = getattr(services.knowledge.pack, catalogue)
    assert pricing["category"] == category and entries
    assert [(i["id"], i["price"]) for i in pricing["items"]] == [(e.id, getattr(e, price)) for e in entries]
    assert all(i["currency"] == "EUR" and i["unit"] for i in pricing["items"])


async def test_get_pricing_unknown_category_lists_the_valid_ones(call: Call) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await call("get_pricing", {"category": "gadgets"})
    assert raised.value.param == "category"
    for valid in ("plans", "models", "consulting", "training", "hardware"):
        assert valid in raised.value.message


async def test_get_pricing_needs_a_category(call: Call) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await call("get_pricing", {})
    assert raised.value.param == "category"


async def test_get_company_info_is_the_company_file(call: Call, services: Services) -> None:
    info = await call("get_company_info", {})
    assert info == services.knowledge.pack.company
    assert info.model_dump()["headquarters"]["city"]


async def test_list_models_without_filter_lists_all(call: Call, services: Services) -> None:
    listed = (await call("list_models", {})).model_dump()["models"]
    assert [m["id"] for m in listed] == [m.id for m in services.knowledge.pack.models]


@pytest.mark.parametrize("capability", ["chat", "embeddings", "vision", "tools"])
async def test_list_models_filters_by_capability(call: Call, services: Services, capability: str) -> None:
    listed = (await call("list_models", {"capability": capability})).model_dump()["models"]
    expected = [m.id for m in services.knowledge.pack.models if capability in m.capabilities]
    assert [m["id"] for m in listed] == expected
    assert all(capability in m["capabilities"] for m in listed)


async def test_list_models_filter_is_a_real_filter(call: Call) -> None:
    every = (await call("list_models", {})).model_dump()["models"]
    embeddings = (await call("list_models", {"capability": "embeddings"})).model_dump()["models"]
    assert 0 < len(embeddings) < len(every)


async def test_list_models_unknown_capability_is_refused(call: Call) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await call("list_models", {"capability": "telepathy"})
    assert raised.value.param == "capability" and "embeddings" in raised.value.message
