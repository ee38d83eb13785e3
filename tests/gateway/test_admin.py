"""Admin login (JWT), API key administration, tenant isolation and the usage summary."""

from __future__ import annotations

import base64
import json

import jwt

from agent_server.gateway.tokens import LEEWAY_SECONDS
from tests.gateway.conftest import PASSWORD, Harness, key_headers


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


async def test_login_returns_a_bearer_jwt_with_the_checked_claims(harness: Harness) -> None:
    admin = await harness.tenant()
    response = await harness.client.post(
        "/admin/auth/login", json={"email": admin.email, "password": PASSWORD}
    )
    body = response.json()
    assert response.status_code == 200 and body["token_type"] == "bearer" and body["expires_in"] == 3600
    header = jwt.get_unverified_header(body["access_token"])
    assert header == {"alg": "HS256", "typ": "at+jwt"}
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["tenant"] == admin.id and claims["permissions"] == ["tenant:admin"]
    assert {"iss", "aud", "exp", "iat", "sub"} <= set(claims)


async def test_wrong_password_and_unknown_user_look_the_same(harness: Harness) -> None:
    admin = await harness.tenant()
    for email, password in ((admin.email, "wrong password here"), ("nobody@example.com", PASSWORD)):
        response = await harness.client.post("/admin/auth/login", json={"email": email, "password": password})
        assert response.status_code == 401
        assert response.json()["error"] == {
            "message": "Wrong e-mail or password.",
            "type": "authentication_error",
            "code": "invalid_credentials",
            "param": None,
        }


async def test_repeated_login_failures_slow_down_that_address_only(harness: Harness) -> None:
    admin = await harness.tenant()
    for _ in range(11):  # ten free failures, then one more that starts the delays
        await harness.client.post("/admin/auth/login", json={"email": admin.email, "password": "x" * 12})
    response = await harness.client.post(
        "/admin/auth/login", json={"email": admin.email, "password": PASSWORD}
    )
    assert response.status_code == 429 and response.headers["Retry-After"] == "1"
    harness.clock.advance(1)  # the delay, not a lockout: the right password works once it has passed
    response = await harness.client.post(
        "/admin/auth/login", json={"email": admin.email, "password": PASSWORD}
    )
    assert response.status_code == 200


async def test_an_expired_token_is_401_expired_token(harness: Harness) -> None:
    admin = await harness.tenant()
    harness.clock.advance(3600 + LEEWAY_SECONDS + 1)
    response = await harness.client.get("/admin/api-keys", headers=admin.headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "expired_token"
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


async def test_tampered_and_foreign_tokens_are_401(harness: Harness) -> None:
    admin = await harness.tenant()
    header, _, signature = admin.token.split(".")
    claims = jwt.decode(admin.token, options={"verify_signature": False})
    forged_claims = _b64({**claims, "permissions": ["platform:admin"], "tenant": "ten_other"})
    tokens = {
        "tampered payload": f"{header}.{forged_claims}.{signature}",
        "alg none": f"{_b64({'alg': 'none', 'typ': 'at+jwt'})}.{_b64(claims)}.",
        "wrong secret": jwt.encode(claims, "x" * 64, algorithm="HS256", headers={"typ": "at+jwt"}),
        "wrong typ": jwt.encode(claims, "x" * 64, algorithm="HS256"),
        "garbage": "not-a-jwt",
        "an api key": (await harness.key(admin))[1],
    }
    for name, token in tokens.items():
        response = await harness.client.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 401, name
        assert response.json()["error"]["code"] == "invalid_token", name
    assert (await harness.client.get("/admin/api-keys")).status_code == 401


async def test_a_user_without_admin_permission_gets_403(harness: Harness) -> None:
    user = await harness.tenant(permissions=())
    response = await harness.client.get("/admin/api-keys", headers=user.headers)
    assert response.status_code == 403 and response.json()["error"]["type"] == "permission_error"


async def test_create_list_revoke_keys(harness: Harness) -> None:
    admin = await harness.tenant()
    created = await harness.client.post(
        "/admin/api-keys", json={"name": "ci", "scopes": ["models", "chat"]}, headers=admin.headers
    )
    assert created.status_code == 201
    body = created.json()
    assert body["id"].startswith("key_") and body["key"].startswith("sk_test_") and len(body["key"]) == 48
    assert body["scopes"] == ["chat", "models"] and body["redacted"] == f"sk_test_…{body['key'][-4:]}"
    listed = (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()
    assert [k["id"] for k in listed["data"]] == [body["id"]] and "key" not in listed["data"][0]
    revoked = await harness.client.delete(f"/admin/api-keys/{body['id']}", headers=admin.headers)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    again = await harness.client.delete(f"/admin/api-keys/{body['id']}", headers=admin.headers)
    assert again.status_code == 200 and again.json()["revoked_at"] == revoked.json()["revoked_at"]


async def test_key_scopes_are_checked_against_the_known_set_and_the_plan(harness: Harness) -> None:
    admin = await harness.tenant("starter")
    for scopes, status, code in (
        (["chat", "teleport"], 400, "validation_error"),
        ([], 400, "validation_error"),
        (["files"], 403, "plan_limit_exceeded"),  # Starter issues chat and models only
    ):
        response = await harness.client.post(
            "/admin/api-keys", json={"name": "x", "scopes": scopes}, headers=admin.headers
        )
        assert response.status_code == status and response.json()["error"]["code"] == code
        assert response.json()["error"]["param"] == "scopes"


async def test_another_tenants_keys_are_invisible_404(harness: Harness) -> None:
    tenant_a, tenant_b = await harness.tenant(), await harness.tenant()
    key_id, key = await harness.key(tenant_a)
    assert (await harness.client.get("/admin/api-keys", headers=tenant_b.headers)).json()["data"] == []
    revoke = await harness.client.delete(f"/admin/api-keys/{key_id}", headers=tenant_b.headers)
    rotate = await harness.client.post(
        "/admin/keys/rotate", json={"key_id": key_id}, headers=tenant_b.headers
    )
    missing = await harness.client.delete("/admin/api-keys/key_doesnotexist00", headers=tenant_b.headers)
    for response in (revoke, rotate, missing):
        assert response.status_code == 404 and response.json()["error"]["type"] == "not_found_error"
    # Another tenant's key and a key that does not exist are indistinguishable (bar the id in the message).
    shape = [{k: v for k, v in r.json()["error"].items() if k != "message"} for r in (revoke, missing)]
    assert shape[0] == shape[1]
    # A's key still works and A still sees it unrevoked.
    assert (await harness.client.get("/v1/models", headers=key_headers(key))).status_code == 200
    assert (await harness.client.get("/admin/api-keys", headers=tenant_a.headers)).json()["data"][0][
        "revoked_at"
    ] is None


async def test_usage_is_summarised_per_key_and_model_for_the_callers_tenant(harness: Harness) -> None:
    tenant_a, tenant_b = await harness.tenant("professional"), await harness.tenant()
    key_id, key = await harness.key(tenant_a)
    await harness.chat(key)
    await harness.chat(key, stream=True)
    await harness.client.post(
        "/v1/chat/completions",
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        headers=key_headers(key),
    )
    await harness.client.post(
        "/v1/chat/completions",
        json={"model": "nope", "messages": [{"role": "user", "content": "hi"}]},
        headers=key_headers(key),
    )
    summary = (await harness.client.get("/admin/usage", headers=tenant_a.headers)).json()
    rows = {(row["key_id"], row["model"]): row for row in summary["data"]}
    small = rows[(key_id, "agentgate-mock-small")]
    assert small["requests"] == 2 and small["errors"] == 0 and small["total_tokens"] > 0
    assert rows[(key_id, "gpt-4o")]["requests"] == 1
    assert rows[(key_id, "nope")]["errors"] == 1
    assert (await harness.client.get("/admin/usage", headers=tenant_b.headers)).json()["data"] == []
