"""Acceptance: every /admin route against every kind of credential (OWASP API1 and API5).

No token and an expired token get 401; a member without admin permission gets 403; another
tenant's admin and a platform admin never reach tenant A's objects (404) and never see A's data;
tenant routes serve tenant admins; platform routes serve only ``platform:admin``.
"""

from __future__ import annotations

import re

import httpx
from fastapi.routing import iter_route_contexts

from agent_server.commerce.tables import CommerceOrderRecord
from agent_server.foundation.timeutil import utc
from tests.admin.conftest import World

PUBLIC = {
    ("POST", "/admin/auth/login"),
    ("POST", "/admin/csp-report/"),
    ("POST", "/admin/auth/password/forgot"),
    ("GET", "/admin/auth/password/reset"),
    ("POST", "/admin/auth/password/reset"),
    ("POST", "/admin/auth/passkey/options"),
    ("POST", "/admin/auth/passkey"),
    ("GET", "/admin/auth/invitation"),
    ("POST", "/admin/auth/invitation"),
}
# Any signed-in user's own account (some end the caller's sessions or membership), so only 401 is
# checked here (tests/accounts/test_passwords_and_sessions.py, test_passkeys_manage.py and
# test_members*.py cover them; tests/security/test_role_policy.py every role).
SELF = {("POST", "/admin/auth/logout"), ("POST", "/admin/auth/password"), ("DELETE", "/admin/membership"), ("GET", "/admin/membership"),
        ("GET", "/admin/auth/passkeys"), ("POST", "/admin/auth/passkeys/options"), ("POST", "/admin/auth/passkeys"),
        ("PATCH", "/admin/auth/passkeys/{passkey_id}"), ("DELETE", "/admin/auth/passkeys/{passkey_id}"),
        ("GET", "/admin/oauth/apps"), ("DELETE", "/admin/oauth/apps")}  # fmt: skip
PLATFORM_ONLY = {
    ("GET", "/admin/llm-routing/"),
    ("PATCH", "/admin/llm-routing/"),
    ("DELETE", "/admin/llm-routing/"),
    ("GET", "/admin/csp-report/aggregate"),
    ("GET", "/admin/platform/tenants"),
    ("PATCH", "/admin/platform/tenants/{tenant_id}"),
    ("POST", "/admin/platform/tenants"),
    ("GET", "/admin/platform/leads"),
    ("GET", "/admin/platform/agent-platforms"),
    ("POST", "/admin/platform/agent-platforms"),
    ("PATCH", "/admin/platform/agent-platforms/{platform_id}"),
    ("DELETE", "/admin/platform/agent-platforms/{platform_id}"),
    ("GET", "/admin/platform/agent-orders"),
    ("PATCH", "/admin/platform/agent-orders/{order_id}"),
    ("POST", "/admin/platform/agent-orders/{order_id}/refund"),
}
# Routes whose success needs what this generic pass cannot make: a WebAuthn credential, a live identity
# provider, a DNS record, an existing object; their own tests (tests/accounts) cover them.
NEEDS_REAL_INPUT = {
    ("POST", "/admin/auth/passkeys"),
    ("PATCH", "/admin/auth/passkeys/{passkey_id}"),
    ("DELETE", "/admin/auth/passkeys/{passkey_id}"),
    ("PUT", "/admin/sso/oidc"),
    ("DELETE", "/admin/sso/oidc"),
    ("PUT", "/admin/sso/saml"),
    ("DELETE", "/admin/sso/saml"),
    ("PATCH", "/admin/sso/connections/{protocol}"),
    ("POST", "/admin/sso/domains/{domain}/verify"),
    # A provider key needs a provider configured in the upstream settings (tests/gateway/test_byok.py).
    ("PUT", "/admin/byok/{provider}"),
    ("GET", "/admin/byok/{provider}"),
    ("DELETE", "/admin/byok/{provider}"),
    ("POST", "/admin/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"),
}
METHOD_ORDER = {"GET": 0, "POST": 1, "PUT": 1, "PATCH": 2, "DELETE": 3}
CSP = '{"csp-report": {"document-uri": "https://app.example/x", "violated-directive": "script-src", "blocked-uri": "https://evil.example/a.js"}}'


def admin_routes(world: World) -> list[tuple[str, str]]:
    found = set()
    for context in iter_route_contexts(world.app.routes):
        if context.path_format.startswith("/admin"):
            for method in getattr(context, "methods", None) or ():
                if method != "HEAD":
                    found.add((method, context.path_format))
    # Reads first, deletes last (deepest first), so the owner's pass deletes bindings before configs.
    return sorted(
        found, key=lambda r: (METHOD_ORDER[r[0]], -r[1].count("/") if r[0] == "DELETE" else 0, r[1])
    )


async def seed_tenant_a(world: World) -> dict[str, str]:
    """Objects of tenant A that other credentials must never reach or see."""
    c, auth = world.client, world.auth("a_admin")
    hook = (
        await c.post(
            "/admin/webhooks", json={"url": "http://127.0.0.1:9/a", "events": ["key.rotated"]}, headers=auth
        )
    ).json()
    chat = {"model": "agentgate-mock-small", "messages": [{"role": "user", "content": "alpha secret plan"}]}
    trace = (await c.post("/admin/playground/chat", json=chat, headers=auth)).json()
    await c.patch(
        "/admin/office_suite/",
        json={"tenant_domain": "alpha.example", "client_secret": "alpha-client-secret"},
        headers=auth,
    )
    binding = (
        await c.post("/admin/office_suite/bindings", json={"user_id": world.users["a_member"]}, headers=auth)
    ).json()
    await c.post("/admin/search_provider/auto-provision", json={}, headers=auth)
    key = (
        await c.post(
            "/admin/search_provider/keys/" + world.users["a_member"] + "/rotate", json={}, headers=auth
        )
    ).json()
    await c.post("/admin/sso/domains", json={"domain": "alpha-sso.example"}, headers=auth)
    api_key, full_key = await world.app.state.gateway.issue_key(world.tenants["a"], "alpha-key", ["chat"])
    agent_platform, agent_order = await seed_agent_order(world)
    return {
        "platform_id": agent_platform,
        "order_id": agent_order,
        "webhook_id": hook["id"],
        "webhook_secret": hook["secret"],
        "traceId": trace["trace_id"],
        "binding_secret": binding["secret"],
        "search_key": key["secret"],
        "userId": world.users["a_member"],
        "user_id": world.users["a_member"],
        "a_admin_user": world.users["a_admin"],
        "key_id": api_key.id,
        "api_key": full_key,
        "tenant_id": world.tenants["a"],
        "domain": "alpha-sso.example",
        "protocol": "oidc",
    }


async def seed_agent_order(world: World) -> tuple[str, str]:
    """An agent platform and an order of it (agentic commerce belongs to the platform, no tenant)."""
    made = await world.app.state.commerce.platforms.create("Matrix assistant", None)
    now = utc(world.clock.now())
    order = CommerceOrderRecord(
        id="acpord_matrix",
        checkout_session_id="cs_matrix",
        platform_id=made.platform.id,
        status="confirmed",
        currency="eur",
        amount_minor=100,
        payment_provider="sandbox",
        payment_ref="pi_sbx_matrix",
        email="buyer@example.com",
        lines=[],
        created_at=now,
        updated_at=now,
    )
    async with world.app.state.services.db.session() as session:
        session.add(order)
    return made.platform.id, order.id


def request_for(method: str, path: str, a: dict[str, str]) -> tuple[str, dict]:
    url = re.sub(r"\{(\w+)\}", lambda m: a.get(m.group(1), "unknown_id"), path)
    bodies = {
        ("POST", "/admin/auth/login"): {"email": "a_admin@example.com", "password": "not-the-password"},
        ("POST", "/admin/api-keys"): {"name": "m", "scopes": ["chat"]},
        ("POST", "/admin/keys/rotate"): {"key_id": a["key_id"]},
        ("POST", "/admin/webhooks"): {"url": "http://127.0.0.1:9/m", "events": ["audit.flagged"]},
        ("PUT", "/admin/usage/thresholds"): {"percents": [80, 100]},
        ("PATCH", "/admin/webhooks/{webhook_id}"): {"description": "m"},
        ("PATCH", "/admin/llm-routing/"): {"routes": {"agentgate-mock-small": [{"backend": "mock"}]}},
        ("POST", "/admin/playground/chat"): {
            "model": "agentgate-mock-small",
            "messages": [{"role": "user", "content": "hi"}],
        },
        ("PATCH", "/admin/office_suite/"): {"tenant_domain": "m.example"},
        ("PATCH", "/admin/search_provider/"): {"market": "de-DE"},
        ("POST", "/admin/office_suite/bindings"): {"user_id": a["a_admin_user"]},
        ("PATCH", "/admin/platform/tenants/{tenant_id}"): {"rate_limit_per_minute": 100},
        ("POST", "/admin/platform/tenants"): {"name": "Matrix", "plan_id": "starter"},
        ("POST", "/admin/platform/agent-platforms"): {"name": "Matrix platform"},
        ("PATCH", "/admin/platform/agent-orders/{order_id}"): {"status": "completed"},
        ("PATCH", "/admin/platform/agent-platforms/{platform_id}"): {"webhook_url": None},
        ("PATCH", "/admin/auth/passkeys/{passkey_id}"): {"name": "m"},
        ("PATCH", "/admin/sso"): {"enforced": False},
        ("PATCH", "/admin/sso/connections/{protocol}"): {"enabled": False},
        ("PATCH", "/admin/members/{user_id}"): {"role": "viewer"},
        ("POST", "/admin/sso/domains"): {"domain": "matrix.example"},
    }
    kwargs: dict = {}
    if (method, path) == ("POST", "/admin/csp-report/"):
        kwargs = {"content": CSP, "headers": {"content-type": "application/csp-report"}}
    elif method in ("POST", "PUT", "PATCH"):
        kwargs = {"json": bodies.get((method, path), {})}
    return url, kwargs


async def call(world: World, who: str | None, method: str, url: str, kwargs: dict) -> httpx.Response:
    headers = dict(kwargs.get("headers", {}))
    if who is not None:
        headers.update(world.auth(who))
    if url == "/admin/llm-routing/" and method in ("PATCH", "DELETE") and who == "platform":
        current = await world.client.get(url, headers=world.auth("platform"))
        headers["If-Match"] = current.headers["etag"]
    rest = {k: v for k, v in kwargs.items() if k != "headers"}
    return await world.client.request(method, url, headers=headers, **rest)


def leaks(response: httpx.Response, a: dict[str, str], platform_route: bool) -> list[str]:
    """Which of tenant A's identifiers or secrets the response shows."""
    private = [
        "webhook_id",
        "webhook_secret",
        "traceId",
        "binding_secret",
        "search_key",
        "userId",
        "key_id",
        "api_key",
        "domain",
    ]
    if not platform_route:
        private.append("tenant_id")
    return [name for name in private if a[name] in response.text]


async def test_every_admin_route_against_every_credential(world: World) -> None:
    a = await seed_tenant_a(world)
    routes = admin_routes(world)
    assert len(routes) >= 40 and ("GET", "/admin/realtime/trace/{traceId}") in routes
    problems: list[str] = []

    for who in (None, "expired", "a_member", "b_admin", "platform"):
        for method, path in routes:
            if (method, path) in SELF and who not in (None, "expired"):
                continue
            url, kwargs = request_for(method, path, a)
            response = await call(world, who, method, url, kwargs)
            status, where = response.status_code, f"{who} {method} {path} -> {response.status_code}"
            if status >= 500:
                problems.append(f"{where}: server error {response.text[:200]}")
            if (method, path) in PUBLIC:
                if leaks(response, a, False):
                    problems.append(f"{where}: leaks {leaks(response, a, False)}")
                continue
            platform_route = (method, path) in PLATFORM_ONLY
            if who is None and status != 401:
                problems.append(f"{where}: expected 401")
            elif who == "expired" and (status != 401 or response.json()["error"]["code"] != "expired_token"):
                problems.append(f"{where}: expected 401 expired_token")
            elif who == "a_member" and status != 403:
                problems.append(f"{where}: expected 403")
            elif who == "b_admin" and platform_route and status != 403:
                problems.append(f"{where}: expected 403 (platform route)")
            elif who == "platform" and platform_route and not 200 <= status < 300:
                problems.append(f"{where}: expected 2xx for a platform admin: {response.text[:200]}")
            elif who in ("b_admin", "platform") and "{" in path and not platform_route and status != 404:
                problems.append(f"{where}: another tenant's object must answer 404")
            if 200 <= status < 300 and who in ("b_admin", "platform") and leaks(response, a, platform_route):
                problems.append(f"{where}: leaks {leaks(response, a, platform_route)}")

    # Tenant A's objects survived every foreign credential.
    auth = world.auth("a_admin")
    assert (await world.client.get(f"/admin/webhooks/{a['webhook_id']}", headers=auth)).status_code == 200
    bindings = (await world.client.get("/admin/office_suite/bindings", headers=auth)).json()["data"]
    assert [b["user_id"] for b in bindings] == [a["userId"]]

    owner_ok = 0
    for method, path in routes:
        if (method, path) in PUBLIC | SELF:
            continue
        url, kwargs = request_for(method, path, a)
        response = await call(world, "a_admin", method, url, kwargs)
        where = f"a_admin {method} {path} -> {response.status_code}"
        if (method, path) in PLATFORM_ONLY:
            if response.status_code != 403:
                problems.append(f"{where}: expected 403 (platform route)")
        elif response.status_code >= 500 or response.status_code in (401, 403):
            problems.append(f"{where}: the tenant admin is refused: {response.text[:200]}")
        else:
            owner_ok += 200 <= response.status_code < 300
    assert not problems, "\n".join(problems)
    expected = len(routes) - len(PLATFORM_ONLY) - len(PUBLIC | SELF) - len(NEEDS_REAL_INPUT)
    assert owner_ok >= expected - 3
