"""Models declared once: a model named only in the upstream settings is routable, listed (with its
price) and callable; plans grant models by pattern; /v1/models lists exactly what a key may call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.knowledge.pack import shipped_content_dir
from tests.gateway.conftest import HarnessFactory
from tests.gateway.test_keys_settings import MESSAGES, create, sdk
from tests.llm.fake_upstream import FakeUpstream

DECLARED = {
    "upstream": "acme-large-2",
    "price": {"input": 100, "output": 400},
    "context_window": 32_000,
    "capabilities": ["chat", "tools"],
    "owned_by": "acme",
}


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def acme(upstream: FakeUpstream, models: dict[str, Any]) -> UpstreamConfig:
    return UpstreamConfig.model_validate(
        {"name": "acme", "base_url": upstream.base_url, "api_key": "sk-platform-acme", "models": models}
    )


async def test_a_model_only_in_the_upstream_settings_is_listed_and_callable(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    catalogue = {
        m["id"] for m in yaml.safe_load((shipped_content_dir() / "models.yaml").read_text())["models"]
    }
    assert "acme-chat-1" not in catalogue
    async with make_harness(mode="production", upstreams=[acme(upstream, {"acme-chat-1": DECLARED})]) as h:
        key = (await create(h, await h.tenant("enterprise"))).json()["key"]
        async with sdk(h, key) as client:
            listed = {m.id: m async for m in client.models.list()}
            assert "acme-chat-1" in listed
            model = listed["acme-chat-1"]
            assert model.owned_by == "acme" and model.model_extra is not None
            assert model.model_extra["pricing"] == {
                "input": 100,
                "output": 400,
                "currency": "EUR",
                "unit": "minor units per 1M tokens",
            }
            assert model.model_extra["context_window"] == 32_000
            assert (await client.models.retrieve("acme-chat-1")).id == "acme-chat-1"
            answer = await client.chat.completions.create(model="acme-chat-1", messages=MESSAGES)  # type: ignore[arg-type]
            assert answer.choices[0].message.content == "Hello from the upstream!"
            assert answer.model == "acme-chat-1"
            assert upstream.requests[-1]["model"] == "acme-large-2"
            assert upstream.headers[-1]["authorization"] == "Bearer sk-platform-acme"


async def test_models_lists_only_what_a_live_key_can_reach(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    async with make_harness(mode="production", upstreams=[acme(upstream, {"gpt-4o-mini": "mini"})]) as h:
        key = (await create(h, await h.tenant("enterprise"))).json()["key"]
        async with sdk(h, key) as client:
            # The mock models route to the mock; gpt-4o and the others of models.yaml have no route.
            assert [m.id async for m in client.models.list()] == [
                "agentgate-mock-small",
                "agentgate-mock-large",
                "gpt-4o-mini",
            ]
            with pytest.raises(openai.NotFoundError):
                await client.models.retrieve("gpt-4o")


async def test_plans_grant_declared_models_by_pattern(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    models = {"gpt-4o-2024-11-20": {"price": {"input": 250, "output": 1000}}, "acme-chat-1": DECLARED}
    async with make_harness(mode="production", upstreams=[acme(upstream, models)]) as h:
        listed: dict[str, list[str]] = {}
        for plan in ("starter", "professional", "enterprise"):
            key = (await create(h, await h.tenant(plan))).json()["key"]
            async with sdk(h, key) as client:
                listed[plan] = [m.id async for m in client.models.list()]
                if plan == "professional":  # gpt-4o* grants the dated model, nothing grants acme
                    answer = await client.chat.completions.create(
                        model="gpt-4o-2024-11-20", messages=MESSAGES
                    )  # type: ignore[arg-type]
                    assert answer.choices[0].message.content
                    with pytest.raises(openai.BadRequestError) as refused:
                        await client.chat.completions.create(model="acme-chat-1", messages=MESSAGES)  # type: ignore[arg-type]
                    assert refused.value.code == "model_not_found"
                    assert "not available on the Professional plan" in refused.value.message
        assert "gpt-4o-2024-11-20" not in listed["starter"] and "acme-chat-1" not in listed["starter"]
        assert "gpt-4o-2024-11-20" in listed["professional"] and "acme-chat-1" not in listed["professional"]
        assert {"gpt-4o-2024-11-20", "acme-chat-1"} <= set(listed["enterprise"])


async def test_a_model_priced_twice_or_in_two_currencies_stops_the_start(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    twice = acme(upstream, {"gpt-4o-mini": {"price": {"input": 16, "output": 60}}})
    with pytest.raises(ValueError, match="price it in one place"):
        async with make_harness(upstreams=[twice]):
            pass
    dollars = acme(upstream, {"acme-chat-1": {"price": {"input": 1, "currency": "USD"}}})
    with pytest.raises(ValueError, match="several currencies"):
        async with make_harness(upstreams=[dollars]):
            pass
    same = acme(upstream, {"gpt-4o-mini": {"price": {"input": 15, "output": 60}, "context_window": 64_000}})
    async with make_harness(upstreams=[same]) as h:  # the same price again is no conflict
        assert h.gateway.models.entries["gpt-4o-mini"].context_window == 64_000


@pytest.mark.parametrize(
    ("entry", "problem"),
    [("gpt 4o", "white space"), ("no-such-model", "unknown model id"), ("", "1 to 200 characters")],
)
async def test_plan_entries_are_ids_of_the_catalogue_or_patterns(
    make_harness: HarnessFactory, tmp_path: Path, entry: str, problem: str
) -> None:
    plans = yaml.safe_load((shipped_content_dir() / "plans.yaml").read_text())
    plans["plans"][0]["models"].append(entry)
    content = tmp_path / "content"
    content.mkdir()
    (content / "plans.yaml").write_text(yaml.safe_dump(plans))
    with pytest.raises(ValueError, match=problem):
        async with make_harness(content_dir=content):
            pass
