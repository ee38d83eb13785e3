"""Spec 4.4: the connectors' POST routes take a required JSON object body, in the OpenAPI document
and on the wire; a missing or malformed body is a 400 in the gateway envelope, and nothing changes."""

from __future__ import annotations

import pytest

from tests.admin.conftest import World

POSTS = [
    "/admin/office_suite/auto-provision",
    "/admin/search_provider/auto-provision",
    "/admin/office_suite/bindings/{userId}/rotate",
    "/admin/search_provider/keys/{userId}/rotate",
]


async def test_the_openapi_document_declares_a_required_json_object_body(world: World) -> None:
    document = (await world.client.get("/openapi.json")).json()
    for path in POSTS:
        body = document["paths"][path]["post"].get("requestBody")
        assert body is not None and body["required"] is True, path
        schema = body["content"]["application/json"]["schema"]
        if "$ref" in schema:
            schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        assert schema["type"] == "object" and schema.get("additionalProperties") is False, path


@pytest.mark.parametrize(
    "body",
    [
        {},  # no body at all
        {"content": b"[]", "headers": {"content-type": "application/json"}},
        {"content": b"not json", "headers": {"content-type": "application/json"}},
        {"json": {"unknown": 1}},
    ],
    ids=["missing", "array", "not-json", "unknown-field"],
)
async def test_a_missing_or_malformed_body_is_refused_and_changes_nothing(world: World, body: dict) -> None:
    c, auth = world.client, world.auth("a_admin")
    member = world.users["a_member"]
    for path in POSTS:
        url = path.replace("{userId}", member)
        kwargs = {**body, "headers": {**auth, **body.get("headers", {})}}
        refused = await c.post(url, **kwargs)
        assert refused.status_code == 400, (url, refused.text)
        assert refused.json()["error"]["type"] == "invalid_request_error", url
    for kind in ("office_suite", "search_provider"):
        status = (await c.get(f"/admin/{kind}/managed-status", headers=auth)).json()
        assert status["configured"] is False and status[{"office_suite": "bindings"}.get(kind, "keys")] == 0


async def test_the_object_bodies_are_accepted_and_rotate_may_relabel(world: World) -> None:
    c, auth, member = world.client, world.auth("a_admin"), world.users["a_member"]
    provisioned = await c.post("/admin/search_provider/auto-provision", json={}, headers=auth)
    assert provisioned.status_code == 201 and provisioned.json()["provisioned"] is True
    issued = await c.post(f"/admin/search_provider/keys/{member}/rotate", json={"label": "ci"}, headers=auth)
    assert issued.status_code == 200 and issued.json()["label"] == "ci"
    kept = await c.post(f"/admin/search_provider/keys/{member}/rotate", json={}, headers=auth)
    assert kept.status_code == 200 and kept.json()["label"] == "ci"  # empty keeps the current label
    assert kept.json()["secret"] != issued.json()["secret"]
