"""Bring your own key: a tenant stores its key for a provider (encrypted, shown as a hint); models
marked BYOK are called with it, and without it they are 402 byok_provider_missing."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import openai
import pytest
import yaml

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.knowledge.pack import shipped_content_dir
from tests.gateway.conftest import Harness, HarnessFactory, TenantAdmin, key_headers
from tests.gateway.test_keys_settings import MESSAGES, create, sdk
from tests.llm.fake_upstream import FakeUpstream

PLATFORM_KEY = "sk-platform-acme-0000"
TENANT_KEY = "sk-tenant-own-acme-7f3a"


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def acme(upstream: FakeUpstream) -> UpstreamConfig:
    return UpstreamConfig.model_validate(
        {
            "name": "acme-eu",
            "provider": "acme",
            "base_url": upstream.base_url,
            "api_key": PLATFORM_KEY,
            "models": {"acme-own": {"upstream": "acme-own-v2", "byok": True}, "acme-shared": "acme-shared"},
        }
    )


async def put_key(h: Harness, admin: TenantAdmin, secret: str = TENANT_KEY, provider: str = "acme") -> dict:
    response = await h.client.put(f"/admin/byok/{provider}", json={"api_key": secret}, headers=admin.headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_byok_model_without_a_key_is_402_and_with_one_goes_upstream_with_it(
    make_harness: HarnessFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    async with make_harness(mode="production", upstreams=[acme(upstream)]) as h:
        admin = await h.tenant("enterprise")
        key = (await create(h, admin)).json()["key"]
        async with sdk(h, key) as client:
            assert "acme-own" not in [m.id async for m in client.models.list()]
            with pytest.raises(openai.APIStatusError) as missing:
                await client.chat.completions.create(model="acme-own", messages=MESSAGES)  # type: ignore[arg-type]
            assert missing.value.status_code == 402 and missing.value.code == "byok_provider_missing"
            assert "PUT /admin/byok/acme" in missing.value.message
            assert upstream.requests == []  # refused before any upstream call

            stored = await put_key(h, admin)
            assert stored == {
                "object": "byok_key",
                "provider": "acme",
                "hint": "…7f3a",
                "created_at": stored["created_at"],
                "updated_at": stored["updated_at"],
            }
            assert "acme-own" in [m.id async for m in client.models.list()]
            answer = await client.chat.completions.create(model="acme-own", messages=MESSAGES)  # type: ignore[arg-type]
            assert answer.choices[0].message.content == "Hello from the upstream!"
            assert upstream.requests[-1]["model"] == "acme-own-v2"
            assert upstream.headers[-1]["authorization"] == f"Bearer {TENANT_KEY}"
            stream = await client.chat.completions.create(
                model="acme-own",
                messages=MESSAGES,  # type: ignore[arg-type]
                stream=True,
            )
            assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            assert upstream.headers[-1]["authorization"] == f"Bearer {TENANT_KEY}"
            # A model of the same upstream that is not BYOK still goes with the platform's key.
            await client.chat.completions.create(model="acme-shared", messages=MESSAGES)  # type: ignore[arg-type]
            assert upstream.headers[-1]["authorization"] == f"Bearer {PLATFORM_KEY}"
        # Another tenant has no key of its own: still 402, and never the first tenant's key.
        stranger = (await create(h, await h.tenant("enterprise"))).json()["key"]
        assert (await h.chat(stranger, model="acme-own")).status_code == 402
        with closing(sqlite3.connect(tmp_path / "agentgate.db")) as db:
            (stored_secret,) = db.execute("SELECT secret_encrypted FROM byok_keys").fetchone()
        assert TENANT_KEY not in stored_secret and "7f3a" not in stored_secret


async def test_replacing_and_deleting_the_key_take_effect_on_the_next_request(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    async with make_harness(mode="production", upstreams=[acme(upstream)]) as h:
        admin = await h.tenant("enterprise")
        key = (await create(h, admin)).json()["key"]
        await put_key(h, admin)
        assert (await h.chat(key, model="acme-own")).status_code == 200
        replaced = await put_key(h, admin, "sk-tenant-second-key-9b9b")
        assert replaced["hint"] == "…9b9b"
        assert (await h.chat(key, model="acme-own")).status_code == 200
        assert upstream.headers[-1]["authorization"] == "Bearer sk-tenant-second-key-9b9b"
        shown = await h.client.get("/admin/byok/acme", headers=admin.headers)
        assert shown.json()["hint"] == "…9b9b" and "sk-tenant" not in shown.text
        listed = (await h.client.get("/admin/byok", headers=admin.headers)).json()
        assert listed["providers"] == ["acme"] and [k["provider"] for k in listed["data"]] == ["acme"]
        deleted = await h.client.delete("/admin/byok/acme", headers=admin.headers)
        assert deleted.status_code == 200 and deleted.json()["deleted"] is True
        again = await h.chat(key, model="acme-own")
        assert again.status_code == 402 and again.json()["error"]["code"] == "byok_provider_missing"
        assert (await h.client.get("/admin/byok/acme", headers=admin.headers)).status_code == 404
        assert (await h.client.delete("/admin/byok/acme", headers=admin.headers)).status_code == 404


async def test_byok_needs_the_plan_feature_a_known_provider_and_an_admin(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    async with make_harness(mode="production", upstreams=[acme(upstream)]) as h:
        starter = await h.tenant("starter")
        response = await h.client.put(
            "/admin/byok/acme", json={"api_key": TENANT_KEY}, headers=starter.headers
        )
        assert response.status_code == 403 and response.json()["error"]["code"] == "plan_limit_exceeded"
        admin = await h.tenant("enterprise")
        unknown = await h.client.put(
            "/admin/byok/nobody", json={"api_key": TENANT_KEY}, headers=admin.headers
        )
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "provider_not_found"
        short = await h.client.put("/admin/byok/acme", json={"api_key": "short"}, headers=admin.headers)
        assert short.status_code == 400 and short.json()["error"]["param"] == "api_key"
        api_key = (await create(h, admin)).json()["key"]
        anonymous = await h.client.put(
            "/admin/byok/acme", json={"api_key": TENANT_KEY}, headers=key_headers(api_key)
        )
        assert anonymous.status_code == 401


async def test_a_catalogue_model_marked_byok_goes_to_its_providers_upstream(
    make_harness: HarnessFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    models = yaml.safe_load((shipped_content_dir() / "models.yaml").read_text())
    mistral = next(m for m in models["models"] if m["id"] == "mistral-large")
    mistral.update(byok=True, provider="acme")
    content = tmp_path / "content"
    content.mkdir()
    (content / "models.yaml").write_text(yaml.safe_dump(models))
    async with make_harness(mode="production", upstreams=[acme(upstream)], content_dir=content) as h:
        admin = await h.tenant("enterprise")
        key = (await create(h, admin)).json()["key"]
        assert (await h.chat(key, model="mistral-large")).json()["error"]["code"] == "byok_provider_missing"
        await put_key(h, admin)
        assert (await h.chat(key, model="mistral-large")).status_code == 200
        # The provider's upstream does not list the model: its public id goes up unchanged.
        assert upstream.requests[-1]["model"] == "mistral-large"
        assert upstream.headers[-1]["authorization"] == f"Bearer {TENANT_KEY}"
    del mistral["provider"]
    (content / "models.yaml").write_text(yaml.safe_dump(models))
    with pytest.raises(ValueError, match="a byok model names its provider"):
        async with make_harness(content_dir=content):
            pass
