"""``Cache-Control: no-store`` on every /admin answer (errors included) and on every answer that
carries a secret; the /v1 hot path is left as it was."""

from __future__ import annotations

import re

from fastapi.routing import iter_route_contexts

from tests.gateway.conftest import Harness, key_headers

NO_STORE = "no-store"


async def test_every_admin_route_answers_no_store_whatever_the_status(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    seen: dict[int, int] = {}
    for route in iter_route_contexts(harness.app.routes):
        if not (route.path_format or "").startswith("/admin/"):
            continue
        path = re.sub(r"\{[^}]+\}", "x", route.path_format)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            if path == "/admin/auth/logout":
                continue  # it would end the session the other requests use
            body = {} if method in ("POST", "PUT", "PATCH") else None
            response = await harness.client.request(method, path, json=body, headers=admin.headers)
            assert response.headers.get("cache-control") == NO_STORE, (method, path, response.status_code)
            seen[response.status_code] = seen.get(response.status_code, 0) + 1
    assert seen.get(200) and seen.get(400) and seen.get(404)  # successes and refusals were both covered
    for answer in (
        await harness.client.get("/admin/api-keys"),  # 401
        await harness.client.get("/admin/no-such-thing", headers=admin.headers),  # 404
        await harness.client.put("/admin/api-keys", headers=admin.headers),  # 405
    ):
        assert answer.status_code >= 400 and answer.headers["cache-control"] == NO_STORE


async def test_answers_that_carry_a_secret_are_never_stored(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    login = await harness.client.post("/admin/auth/login", json={"email": admin.email, "password": "x" * 12})
    assert login.headers["cache-control"] == NO_STORE
    created = await harness.client.post(
        "/admin/api-keys", json={"name": "ci", "scopes": ["chat"]}, headers=admin.headers
    )
    rotated = await harness.client.post(
        "/admin/keys/rotate", json={"key_id": created.json()["id"]}, headers=admin.headers
    )
    hook = await harness.client.post(
        "/admin/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "events": ["key.rotated"]},
        headers=admin.headers,
    )
    assert "secret" in hook.json()
    for answer in (created, rotated, hook):
        assert answer.status_code == 201 and answer.headers["cache-control"] == NO_STORE


async def test_the_gateway_keeps_its_own_caching_headers(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    models = await harness.client.get("/v1/models", headers=key_headers(key))
    assert models.status_code == 200 and "cache-control" not in models.headers
    stream = await harness.chat(key, stream=True)
    assert stream.headers["cache-control"] == "no-cache"  # the event stream's own header, untouched
