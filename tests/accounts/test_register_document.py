"""``GET``/``OPTIONS /register`` describe exactly what is live: every endpoint it names is served,
every method it lists registers, and a method it does not list is refused."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.routing import Match

from tests.accounts.conftest import PASSWORD, World


def served(app: FastAPI, method: str, path: str) -> bool:
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    return any(route.matches(scope)[0] == Match.FULL for route in app.router.routes)


async def test_every_advertised_endpoint_is_served(world: World) -> None:
    for method in ("GET", "OPTIONS"):
        answer = await world.client.request(method, "/register")
        assert answer.status_code == 200
        doc = answer.json()
        assert (
            doc["self_serve"] is True
            and doc["manual_approval"] is False
            and doc["api_flow"]["status"] == "live"
        )
        for name, endpoint in doc["endpoints"].items():
            path = urlsplit(endpoint["url"]).path
            assert served(world.app, endpoint["method"], path), (
                f"{name}: {endpoint} is advertised, not served"
            )
    assert answer.headers["allow"] == "GET, POST, OPTIONS"
    assert not served(world.app, "POST", "/register/nonexistent")  # the check itself can fail


async def test_every_advertised_method_registers_and_others_are_refused(world: World) -> None:
    doc = (await world.client.get("/register")).json()
    offered = {detail["body"]["method"] for detail in doc["method_details"]}
    assert "password" in offered and len(doc["methods"]) == len(offered)
    for i, method in enumerate(sorted({"password", "passkey"})):
        body = {"email": f"m{i}@acme.example", "organisation": "Acme", "plan": "starter", "method": method}
        if method == "password":
            body["password"] = PASSWORD
        answer = await world.client.post("/register", json=body)
        if method in offered:
            assert answer.status_code == 202, answer.text
        else:
            assert answer.status_code == 400, f"{method} is not advertised but was accepted"
    assert doc["verification"]["expires_in_seconds"] == world.settings.registration_link_ttl_seconds
    assert {p["trial_days"] for p in doc["plans"]} == {14}
    assert doc["password_rules"]["min_length"] == 12 and doc["password_rules"]["breach_checked"] is True


async def test_every_account_route_is_in_the_openapi_document(world: World) -> None:
    paths = (await world.client.get("/openapi.json")).json()["paths"]
    for method, path in (
        ("post", "/register"),
        ("post", "/register/verify"),
        ("post", "/register/passkey"),
        ("post", "/admin/auth/logout"),
        ("post", "/admin/auth/password"),
        ("post", "/admin/auth/password/forgot"),
        ("post", "/admin/auth/password/reset"),
        ("post", "/admin/auth/passkey"),
        ("post", "/admin/auth/passkeys"),
        ("post", "/admin/platform/tenants"),
        ("post", "/sso/discover"),
        ("put", "/admin/sso/oidc"),
        ("get", "/sso/oidc/callback"),
        ("put", "/admin/sso/saml"),
        ("post", "/sso/saml/{tenant_id}/acs"),
    ):
        assert method in paths.get(path, {}), f"{method.upper()} {path} is not documented"
        assert paths[path][method].get("summary"), f"{method.upper()} {path} has no summary"
