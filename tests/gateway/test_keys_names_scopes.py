"""A key's name is trimmed and never blank (the one rule of the API and the page); a key created
without scopes gets chat and models, so the SDKs' ``models.list()`` works with it."""

from __future__ import annotations

import pytest

from agent_server.foundation.errors import ValidationFailed
from agent_server.gateway.key_settings import DEFAULT_SCOPES
from tests.gateway.conftest import MODEL, Harness
from tests.gateway.test_keys_settings import MESSAGES, sdk


async def test_names_are_trimmed_on_create_and_patch(harness: Harness) -> None:
    admin = await harness.tenant()
    long_name = "n" * 200
    created = await harness.client.post(
        "/admin/api-keys", json={"name": f"  \t{long_name}\u00a0 "}, headers=admin.headers
    )
    assert created.status_code == 201, created.text
    assert created.json()["name"] == long_name  # 200 characters once the spaces around are gone
    key_id = created.json()["id"]
    patched = await harness.client.patch(
        f"/admin/api-keys/{key_id}", json={"name": "  ci runner  "}, headers=admin.headers
    )
    assert patched.status_code == 200 and patched.json()["name"] == "ci runner"
    shown = await harness.client.get(f"/admin/api-keys/{key_id}", headers=admin.headers)
    assert shown.json()["name"] == "ci runner"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "must not be blank"),
        ("     ", "must not be blank"),
        ("\u3000\t\n", "must not be blank"),
        ("n" * 201, "at most 200 characters"),
        ("two\nlines", "control characters"),
        ("nul\x00", "control characters"),
        ("evil\u202eexe.txt", "control characters"),
    ],
)
async def test_blank_long_and_control_names_are_400_naming_the_field(
    harness: Harness, name: str, problem: str
) -> None:
    admin = await harness.tenant()
    refused = await harness.client.post("/admin/api-keys", json={"name": name}, headers=admin.headers)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "validation_error" and error["param"] == "name" and problem in error["message"]
    key_id, _ = await harness.key(admin)
    patch = await harness.client.patch(
        f"/admin/api-keys/{key_id}", json={"name": name}, headers=admin.headers
    )
    assert patch.status_code == 400 and patch.json()["error"]["param"] == "name"
    listed = (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"]
    assert [k["name"] for k in listed] == ["test"]  # nothing half-written


async def test_the_service_applies_the_same_rule_as_the_bodies(harness: Harness) -> None:
    admin = await harness.tenant()
    record, _ = await harness.gateway.issue_key(admin.id, "  svc  ", ["chat"])
    assert record.name == "svc"
    with pytest.raises(ValidationFailed, match="must not be blank") as refused:
        await harness.gateway.issue_key(admin.id, "   ", ["chat"])
    assert refused.value.param == "name"


async def test_a_key_without_scopes_gets_chat_and_models(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    created = await harness.client.post("/admin/api-keys", json={"name": "sdk"}, headers=admin.headers)
    assert created.status_code == 201, created.text
    assert created.json()["scopes"] == sorted(DEFAULT_SCOPES) == ["chat", "models"]
    async with sdk(harness, created.json()["key"]) as client:
        assert MODEL in [model.id async for model in client.models.list()]
        answer = await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        assert answer.choices[0].message.content
    explicit = await harness.client.post(
        "/admin/api-keys", json={"name": "chat only", "scopes": ["chat"]}, headers=admin.headers
    )
    assert explicit.json()["scopes"] == ["chat"]  # scopes sent are kept as sent
    empty = await harness.client.post(
        "/admin/api-keys", json={"name": "none", "scopes": []}, headers=admin.headers
    )
    assert empty.status_code == 400 and empty.json()["error"]["param"] == "scopes"
