"""Prompts from the content pack, resource templates and completions (prompt arguments, template parameters)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.mcp.support import ERAS, answer, rpc

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def result(client: httpx.AsyncClient, method: str, params: dict, era: str = "2025-11-25") -> dict:
    body = answer(await rpc(client, method, params, era=era))
    assert "result" in body, body
    return body["result"]


async def error(client: httpx.AsyncClient, method: str, params: dict, era: str = "2025-11-25") -> dict:
    body = answer(await rpc(client, method, params, era=era))
    assert "error" in body, body
    return body["error"]


def prompt_text(rendered: dict) -> str:
    assert rendered["messages"][0]["role"] == "user"
    return rendered["messages"][0]["content"]["text"]


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_are_listed_with_their_arguments(module_client: httpx.AsyncClient, era: str) -> None:
    prompts = {p["name"]: p for p in (await result(module_client, "prompts/list", {}, era))["prompts"]}
    assert set(prompts) == {"plan_consulting_engagement", "choose_gateway_plan", "recommend_training"}
    plan = prompts["plan_consulting_engagement"]
    assert plan["title"] == "Plan a consulting engagement"
    assert [(a["name"], a["required"]) for a in plan["arguments"]] == [("goal", True), ("package", False)]


async def test_consulting_prompt_puts_the_packages_and_prices_of_the_pack_in_front_of_the_model(
    module_client: httpx.AsyncClient,
) -> None:
    goal = {"goal": "an assistant that answers supplier questions"}
    every = prompt_text(
        await result(module_client, "prompts/get", {"name": "plan_consulting_engagement", "arguments": goal})
    )
    assert "an assistant that answers supplier questions" in every
    assert "Agent Architecture Review" in every and "3,500.00 EUR" in every and "Custom Agent" in every
    assert "Free 30-minute discovery call" in every.replace("free 30-minute", "Free 30-minute")
    one = prompt_text(
        await result(
            module_client,
            "prompts/get",
            {
                "name": "plan_consulting_engagement",
                "arguments": {**goal, "package": "ai-readiness-assessment"},
            },
        )
    )
    assert "AI Readiness Assessment" in one and "Agent Architecture Review" not in one


async def test_prompt_arguments_are_checked_against_the_pack(module_client: httpx.AsyncClient) -> None:
    params = {"name": "plan_consulting_engagement", "arguments": {"goal": "x", "package": "moon-landing"}}
    problem = await error(module_client, "prompts/get", params)
    assert problem["code"] == -32602 and problem["data"] == {"param": "package"}
    assert "moon-landing" in problem["message"] and "agent-architecture-review" in problem["message"]
    extra = await error(
        module_client,
        "prompts/get",
        {"name": "choose_gateway_plan", "arguments": {"needs": "x", "budget": "1"}},
    )
    assert extra["code"] == -32602 and extra["data"] == {"param": "budget"}


async def test_plan_and_training_prompts_render_from_the_pack(module_client: httpx.AsyncClient) -> None:
    plan = prompt_text(
        await result(
            module_client,
            "prompts/get",
            {"name": "choose_gateway_plan", "arguments": {"needs": "600 requests a minute"}},
        )
    )
    assert "Starter" in plan and "Professional" in plan and "14-day trial" in plan
    training = prompt_text(
        await result(
            module_client,
            "prompts/get",
            {"name": "recommend_training", "arguments": {"team": "two developers", "level": "advanced"}},
        )
    )
    assert "Production LLM Operations" in training and "Agent Engineering Fundamentals" not in training


@pytest.mark.parametrize("era", ERAS)
async def test_templates_are_listed_and_read(module_client: httpx.AsyncClient, era: str) -> None:
    templates = (await result(module_client, "resources/templates/list", {}, era))["resourceTemplates"]
    assert {t["uriTemplate"]: t["mimeType"] for t in templates} == {
        "faq://entry/{id}": "application/json",
        "pricing://table/{category}": "application/json",
    }
    entry = (await result(module_client, "resources/read", {"uri": "faq://entry/api-key-format"}, era))[
        "contents"
    ][0]
    assert entry["uri"] == "faq://entry/api-key-format" and "sk_live_" in json.loads(entry["text"])["answer"]
    prices = (await result(module_client, "resources/read", {"uri": "pricing://table/training"}, era))[
        "contents"
    ][0]
    assert {item["unit"] for item in json.loads(prices["text"])["items"]} == {"per participant"}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("ref", "argument", "typed", "expected"),
    [
        (
            {"type": "ref/prompt", "name": "plan_consulting_engagement"},
            "package",
            "ai",
            ["ai-readiness-assessment", "eu-ai-act-readiness"],  # starting with it first
        ),
        ({"type": "ref/prompt", "name": "choose_gateway_plan"}, "plan", "PRO", ["professional"]),
        (
            {"type": "ref/prompt", "name": "recommend_training"},
            "level",
            "",
            ["beginner", "intermediate", "advanced"],
        ),
        ({"type": "ref/resource", "uri": "pricing://table/{category}"}, "category", "tr", ["training"]),
        ({"type": "ref/resource", "uri": "faq://entry/{id}"}, "id", "api-key-f", ["api-key-format"]),
        ({"type": "ref/prompt", "name": "plan_consulting_engagement"}, "goal", "an", []),  # free text
    ],
)
async def test_completions_offer_values_from_the_pack(
    module_client: httpx.AsyncClient, era: str, ref: dict, argument: str, typed: str, expected: list[str]
) -> None:
    params = {"ref": ref, "argument": {"name": argument, "value": typed}}
    completion = (await result(module_client, "completion/complete", params, era))["completion"]
    assert completion["values"] == expected
    assert completion["total"] == len(expected) and completion["hasMore"] is False


async def test_completion_ranks_prefix_matches_first(module_client: httpx.AsyncClient) -> None:
    params = {
        "ref": {"type": "ref/resource", "uri": "faq://entry/{id}"},
        "argument": {"name": "id", "value": "key"},
    }
    values = (await result(module_client, "completion/complete", params))["completion"]["values"]
    assert values and all("key" in v for v in values)
    assert values == sorted(values, key=lambda v: not v.startswith("key"))


@pytest.mark.parametrize(
    ("ref", "argument", "names"),
    [
        ({"type": "ref/prompt", "name": "no_prompt"}, "x", "no_prompt"),
        ({"type": "ref/prompt", "name": "choose_gateway_plan"}, "colour", "colour"),
        ({"type": "ref/resource", "uri": "faq://{nope}"}, "nope", "faq://{nope}"),
        ({"type": "ref/resource", "uri": "faq://entry/{id}"}, "slug", "slug"),
    ],
)
async def test_completion_of_an_unknown_reference_is_invalid_params(
    module_client: httpx.AsyncClient, ref: dict, argument: str, names: str
) -> None:
    problem = await error(
        module_client, "completion/complete", {"ref": ref, "argument": {"name": argument, "value": ""}}
    )
    assert problem["code"] == -32602 and names in problem["message"]
