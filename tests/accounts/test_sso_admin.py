"""SSO administration over HTTP: who may call it, the OIDC connection (checked against a real provider
at save), domain claims verified against a real DNS server on loopback, and tenant isolation.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from agent_server.accounts.tables import SsoConnection
from agent_server.gateway import repository as repo
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL, connect, set_up_sso, sso_app, verify_domain
from tests.conftest import free_port
from tests.gateway.conftest import Harness, TenantAdmin

DOMAIN = "example-sso.test"
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/admin/sso", None),
    ("PUT", "/admin/sso/oidc", {"issuer": "https://idp.example", "client_id": "c", "client_secret": "s"}),
    ("DELETE", "/admin/sso/oidc", None),
    ("PATCH", "/admin/sso", {"enforced": True}),
    ("PATCH", "/admin/sso/connections/oidc", {"enabled": False}),
    ("GET", "/admin/sso/enforcement-impact", None),
    ("POST", "/admin/sso/domains", {"domain": DOMAIN}),
    ("POST", f"/admin/sso/domains/{DOMAIN}/verify", None),
    ("GET", "/admin/sso/domains", None),
    ("DELETE", f"/admin/sso/domains/{DOMAIN}", None),
]


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CALLBACK_URL, {"ann": {"email": f"ann@{DOMAIN}", "email_verified": True}}) as running:
        yield running


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


@pytest.fixture
async def h(tmp_path: Path, dns: LoopbackDns) -> AsyncIterator[Harness]:
    async with sso_app(tmp_path, dns) as harness:
        yield harness


def error(response: Any) -> dict[str, Any]:
    return response.json()["error"]


async def claim(h: Harness, admin: TenantAdmin, domain: str) -> Any:
    return await h.client.post("/admin/sso/domains", json={"domain": domain}, headers=admin.headers)


async def test_every_route_needs_a_tenant_admin(h: Harness) -> None:
    member = await h.tenant("enterprise", permissions=())
    for method, path, body in ROUTES:
        anonymous = await h.client.request(method, path, json=body)
        assert anonymous.status_code == 401, (method, path, anonymous.text)
        refused = await h.client.request(method, path, json=body, headers=member.headers)
        assert refused.status_code == 403, (method, path, refused.text)
        assert error(refused)["type"] == "permission_error"


async def test_another_tenant_sees_and_changes_nothing(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    owner, other = await h.tenant("enterprise"), await h.tenant("enterprise")
    await set_up_sso(h, owner, provider, dns, DOMAIN)

    overview = (await h.client.get("/admin/sso", headers=other.headers)).json()
    assert overview["connections"] == [] and overview["domains"] == [] and overview["enforced"] is False
    taken = await claim(h, other, DOMAIN)
    assert taken.status_code == 409 and error(taken)["code"] == "domain_taken"
    verify = await h.client.post(f"/admin/sso/domains/{DOMAIN}/verify", headers=other.headers)
    assert verify.status_code == 409
    assert (await h.client.delete(f"/admin/sso/domains/{DOMAIN}", headers=other.headers)).status_code == 404
    assert (await h.client.delete("/admin/sso/oidc", headers=other.headers)).status_code == 404
    enforce = await h.client.patch("/admin/sso", json={"enforced": True}, headers=other.headers)
    assert enforce.status_code == 409 and error(enforce)["code"] == "sso_not_ready"

    mine = (await h.client.get("/admin/sso", headers=owner.headers)).json()
    assert [c["protocol"] for c in mine["connections"]] == ["oidc"]
    assert [(d["domain"], d["verified"]) for d in mine["domains"]] == [(DOMAIN, True)]


async def test_the_client_secret_is_stored_encrypted_and_never_shown(
    h: Harness, provider: OidcProvider
) -> None:
    admin = await h.tenant("enterprise")
    saved = await connect(h, admin, provider, scopes=["openid", "email"], jit_permissions=[])
    assert saved.status_code == 200, saved.text
    view = saved.json()
    assert view["redirect_uri"] == CALLBACK_URL and view["enabled"] is True
    assert view["config"] == {
        "issuer": provider.issuer,
        "client_id": provider.client_id,
        "scopes": ["openid", "email"],
        "jit_permissions": [],
    }
    overview = await h.client.get("/admin/sso", headers=admin.headers)
    assert overview.json()["oidc_redirect_uri"] == CALLBACK_URL
    for response in (saved, overview):
        assert provider.client_secret not in response.text
    async with h.gateway.db.session() as session:
        row = (await session.execute(select(SsoConnection))).scalars().one()
    assert row.secret and provider.client_secret not in row.secret
    assert h.app.state.accounts.box.decrypt(row.secret) == provider.client_secret

    assert (await h.client.delete("/admin/sso/oidc", headers=admin.headers)).status_code == 204
    again = await h.client.delete("/admin/sso/oidc", headers=admin.headers)
    assert again.status_code == 404 and error(again)["code"] == "not_found"
    assert (await h.client.get("/admin/sso", headers=admin.headers)).json()["connections"] == []


async def test_the_stored_secret_is_kept_only_for_the_same_issuer_and_client(
    h: Harness, provider: OidcProvider
) -> None:
    admin = await h.tenant("enterprise")
    first = await connect(h, admin, provider, client_secret=None)
    assert first.status_code == 400 and error(first)["param"] == "client_secret", first.text
    assert (await connect(h, admin, provider)).status_code == 200

    kept = await connect(h, admin, provider, client_secret=None, scopes=["openid", "email"])
    assert kept.status_code == 200 and kept.json()["config"]["scopes"] == ["openid", "email"], kept.text
    async with h.gateway.db.session() as session:
        row = (await session.execute(select(SsoConnection))).scalars().one()
    assert h.app.state.accounts.box.decrypt(row.secret) == provider.client_secret

    # The secret goes to the provider's token endpoint: another client or issuer must bring its own.
    other = await connect(h, admin, provider, client_secret=None, client_id="another-client")
    assert other.status_code == 400 and error(other)["param"] == "client_secret", other.text


async def test_a_connection_is_disabled_and_enabled_keeping_its_settings(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    # A platform administrator of the tenant keeps their session when enforcement starts.
    admin = await h.tenant("enterprise", permissions=("tenant:admin", "platform:admin"))
    other = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, "toggle-sso.test")
    path = "/admin/sso/connections/oidc"
    off = await h.client.patch(path, json={"enabled": False}, headers=admin.headers)
    assert off.status_code == 200 and off.json()["enabled"] is False, off.text
    assert off.json()["config"]["issuer"] == provider.issuer
    assert (await h.client.get(f"/sso/oidc/{admin.id}/start")).status_code == 404
    on = await h.client.patch(path, json={"enabled": True}, headers=admin.headers)
    assert on.status_code == 200 and on.json()["enabled"] is True
    assert (await h.client.get(f"/sso/oidc/{admin.id}/start")).status_code == 302

    assert (
        await h.client.patch("/admin/sso", json={"enforced": True}, headers=admin.headers)
    ).status_code == 200
    kept_on = await h.client.patch(path, json={"enabled": False}, headers=admin.headers)
    assert kept_on.status_code == 409 and error(kept_on)["code"] == "sso_enforced", kept_on.text

    assert (await h.client.patch(path, json={"enabled": False}, headers=other.headers)).status_code == 404
    unknown = await h.client.patch(
        "/admin/sso/connections/ldap", json={"enabled": False}, headers=admin.headers
    )
    assert unknown.status_code == 400 and error(unknown)["param"] == "protocol", unknown.text
    starter = await h.tenant("starter")
    refused = await h.client.patch(path, json={"enabled": True}, headers=starter.headers)
    assert refused.status_code == 403 and error(refused)["code"] == "plan_limit_exceeded"


async def test_the_issuer_is_checked_when_saved(h: Harness, provider: OidcProvider) -> None:
    admin = await h.tenant("enterprise")
    base = {"client_id": provider.client_id, "client_secret": provider.client_secret}
    cases = {
        f"{provider.issuer}/": "names the issuer",  # the document says the issuer without the slash
        f"http://127.0.0.1:{free_port()}": "did not answer",
        f"{provider.issuer}/elsewhere": "answered HTTP 404",
    }
    for issuer, problem in cases.items():
        refused = await h.client.put(
            "/admin/sso/oidc", json={**base, "issuer": issuer}, headers=admin.headers
        )
        assert refused.status_code == 400, refused.text
        assert error(refused)["code"] == "sso_issuer_invalid" and error(refused)["param"] == "issuer"
        assert problem in error(refused)["message"]

    bodies = [
        ({"issuer": "idp.example"}, "validation_error"),
        ({"issuer": provider.issuer, "jit_permissions": ["platform:admin"]}, "invalid_permissions"),
        ({"issuer": provider.issuer, "scopes": ["email"]}, "invalid_scopes"),
        ({"issuer": provider.issuer, "unknown": 1}, "validation_error"),
    ]
    for body, code in bodies:
        refused = await h.client.put("/admin/sso/oidc", json={**base, **body}, headers=admin.headers)
        assert refused.status_code == 400 and error(refused)["code"] == code, refused.text
    assert (await h.client.get("/admin/sso", headers=admin.headers)).json()["connections"] == []


@pytest.mark.parametrize(
    ("field", "url", "reason"),
    [
        ("token_endpoint", "http://10.0.0.7/token", "10.0.0.7 is a private address"),
        ("jwks_uri", "http://169.254.169.254/latest/meta-data", "169.254.169.254 is a private address"),
        ("authorization_endpoint", "http://100.64.0.1/auth", "100.64.0.1 is not globally routable"),
    ],
)
async def test_an_endpoint_on_an_internal_address_is_refused_at_save(
    h: Harness, field: str, url: str, reason: str
) -> None:
    # A public issuer whose discovery document names an internal endpoint was saved, and the server
    # would have called that address at the first sign-in.
    with OidcProvider(CALLBACK_URL, {}, discovery={field: url}) as misleading:
        admin = await h.tenant("enterprise")
        refused = await connect(h, admin, misleading)
    assert refused.status_code == 400, refused.text
    assert error(refused)["code"] == "sso_url_refused" and error(refused)["param"] == field
    assert reason in error(refused)["message"]
    assert (await h.client.get("/admin/sso", headers=admin.headers)).json()["connections"] == []


async def test_a_boolean_field_takes_only_true_or_false(h: Harness) -> None:
    # The document says boolean: 0, 1 or "false" were coerced (enforced: 0 saved as false).
    admin = await h.tenant("enterprise")
    saml = {"idp_metadata_xml": "<EntityDescriptor/>"}
    for value in (0, 1, "false"):
        for method, path, body in (
            ("PATCH", "/admin/sso", {"enforced": value}),
            (
                "PUT",
                "/admin/sso/oidc",
                {"issuer": "https://idp.example", "client_id": "c", "client_secret": "s", "enabled": value},
            ),
            ("PUT", "/admin/sso/saml", {**saml, "enabled": value}),
        ):
            refused = await h.client.request(method, path, json=body, headers=admin.headers)
            assert refused.status_code == 400, (method, path, value, refused.text)
            assert error(refused)["code"] == "validation_error" and error(refused)["param"] in (
                "enforced",
                "enabled",
            )


async def test_an_issuer_host_with_no_valid_dns_name_is_refused_before_any_look_up(h: Harness) -> None:
    # A C1 control character has no IDNA form: the look-up raised UnicodeError, a 500.
    admin = await h.tenant("enterprise")
    body = {"issuer": "https://idp\x84.example", "client_id": "c", "client_secret": "s"}
    refused = await h.client.put("/admin/sso/oidc", json=body, headers=admin.headers)
    assert refused.status_code == 400 and error(refused)["code"] == "sso_url_refused", refused.text
    assert error(refused)["param"] == "issuer" and "not a valid host name" in error(refused)["message"]


async def test_production_refuses_an_issuer_on_loopback(
    tmp_path: Path, provider: OidcProvider, dns: LoopbackDns
) -> None:
    async with sso_app(tmp_path, dns, mode="production") as h:
        admin = await h.tenant("enterprise")
        refused = await connect(h, admin, provider)
        assert refused.status_code == 400 and error(refused)["code"] == "sso_url_refused", refused.text
        https = await connect(h, admin, provider, issuer=provider.issuer.replace("http:", "https:"))
        assert https.status_code == 400 and "loopback" in error(https)["message"], https.text


async def test_a_domain_is_claimed_then_verified_by_its_dns_record(h: Harness, dns: LoopbackDns) -> None:
    admin = await h.tenant("enterprise")
    claimed = await claim(h, admin, " Claim-SSO.Test. ")
    assert claimed.status_code == 201, claimed.text
    view = claimed.json()
    assert view["domain"] == "claim-sso.test" and view["verified"] is False
    record = view["record"]
    assert record["type"] == "TXT" and record["name"] == "_agentgate-verification.claim-sso.test"
    assert re.fullmatch(r"agentgate-verification=[0-9a-f]{40}", record["value"])
    again = await claim(h, admin, "claim-sso.test")
    assert again.status_code == 200 and again.json()["record"] == record

    missing = await h.client.post("/admin/sso/domains/claim-sso.test/verify", headers=admin.headers)
    assert missing.status_code == 400 and error(missing)["code"] == "domain_record_missing"
    assert error(missing)["record"] == record
    dns.publish(record["name"], "agentgate-verification=somebody-else")
    assert (
        await h.client.post("/admin/sso/domains/claim-sso.test/verify", headers=admin.headers)
    ).status_code == 400
    dns.publish(record["name"], record["value"])
    verified = await h.client.post("/admin/sso/domains/claim-sso.test/verify", headers=admin.headers)
    assert verified.status_code == 200 and verified.json()["verified"] is True
    listed = (await h.client.get("/admin/sso/domains", headers=admin.headers)).json()["data"]
    assert [(d["domain"], d["verified"]) for d in listed] == [("claim-sso.test", True)]

    assert (
        await h.client.delete("/admin/sso/domains/claim-sso.test", headers=admin.headers)
    ).status_code == 204
    assert (await h.client.get("/admin/sso/domains", headers=admin.headers)).json()["data"] == []
    for bad in ("localhost", "-bad.test", "a..b.test", "10.0.0.1", "under_score.test", "a" * 64 + ".test"):
        refused = await claim(h, admin, bad)
        assert refused.status_code == 400 and error(refused)["code"] == "invalid_domain", bad


async def test_an_unverified_claim_does_not_block_the_domains_owner(h: Harness, dns: LoopbackDns) -> None:
    squatter, owner = await h.tenant("enterprise"), await h.tenant("enterprise")
    first = (await claim(h, squatter, "contested-sso.test")).json()["record"]
    theirs = await claim(h, owner, "contested-sso.test")
    assert theirs.status_code == 201 and theirs.json()["record"]["value"] != first["value"]

    await verify_domain(h, owner, dns, "contested-sso.test")
    dns.publish(first["name"], first["value"])  # even with its own record published, it is too late
    late = await claim(h, squatter, "contested-sso.test")
    assert late.status_code == 409 and error(late)["code"] == "domain_taken"
    verify = await h.client.post("/admin/sso/domains/contested-sso.test/verify", headers=squatter.headers)
    assert verify.status_code == 409 and error(verify)["code"] == "domain_taken"
    mine = (await h.client.get("/admin/sso/domains", headers=owner.headers)).json()["data"]
    assert [(d["domain"], d["verified"]) for d in mine] == [("contested-sso.test", True)]


async def test_pending_claims_of_one_domain_coexist_each_with_its_own_record(
    h: Harness, dns: LoopbackDns
) -> None:
    # A second tenant's claim used to take over the first one's row: B's claim vanished, and B's
    # admin could tell from the changed timestamp that someone else had claimed the domain.
    b, a = await h.tenant("enterprise"), await h.tenant("enterprise")
    b_claim = (await claim(h, b, "shared-sso.test")).json()
    h.clock.advance(60)
    a_claim = (await claim(h, a, "shared-sso.test")).json()
    b_list = (await h.client.get("/admin/sso/domains", headers=b.headers)).json()["data"]
    assert b_list == [b_claim]  # the same record and the same creation time as before A's claim
    assert a_claim["record"] != b_claim["record"] and a_claim["created_at"] != b_claim["created_at"]
    again = await claim(h, b, "shared-sso.test")
    assert again.status_code == 200 and again.json() == b_claim

    # Either may delete only its own claim; the other's stays.
    assert (await h.client.delete("/admin/sso/domains/shared-sso.test", headers=a.headers)).status_code == 204
    assert (await h.client.get("/admin/sso/domains", headers=b.headers)).json()["data"] == [b_claim]
    a_claim = (await claim(h, a, "shared-sso.test")).json()

    # The first to verify holds the domain; the other claim then fails with domain_taken.
    dns.publish(b_claim["record"]["name"], b_claim["record"]["value"])
    dns.publish(a_claim["record"]["name"], a_claim["record"]["value"])
    won = await h.client.post("/admin/sso/domains/shared-sso.test/verify", headers=b.headers)
    assert won.status_code == 200 and won.json()["verified"] is True
    lost = await h.client.post("/admin/sso/domains/shared-sso.test/verify", headers=a.headers)
    assert lost.status_code == 409 and error(lost)["code"] == "domain_taken", lost.text
    assert (await h.client.get("/admin/sso/domains", headers=a.headers)).json()["data"][0][
        "verified"
    ] is False

    # Once the holder lets go, the other tenant's pending claim can be verified.
    assert (await h.client.delete("/admin/sso/domains/shared-sso.test", headers=b.headers)).status_code == 204
    held = await h.client.post("/admin/sso/domains/shared-sso.test/verify", headers=a.headers)
    assert held.status_code == 200 and held.json()["verified"] is True


async def test_the_enforcement_impact_names_who_would_be_locked_out(h: Harness, dns: LoopbackDns) -> None:
    admin = await h.tenant("enterprise")
    await verify_domain(h, admin, dns, "impact-sso.test")
    db, now = h.gateway.db, h.clock.now()
    for email, permissions in (
        ("inside@impact-sso.test", []),
        ("outside@elsewhere.test", []),
        ("operator@elsewhere.test", ["platform:admin", "tenant:admin"]),
    ):
        await repo.add_user(db, repo.new_user(now, admin.id, email, None, permissions))
    impact = await h.client.get("/admin/sso/enforcement-impact", headers=admin.headers)
    assert impact.status_code == 200, impact.text
    assert impact.json() == {
        "object": "sso_enforcement_impact",
        "signed_out": 3,  # the admin, inside@ and outside@; the platform administrator keeps signing in
        "locked_out": 2,
        "locked_out_emails": sorted([admin.email, "outside@elsewhere.test"]),
        "platform_admins_kept": ["operator@elsewhere.test"],
    }


async def test_a_dns_failure_is_a_clear_error(h: Harness, dns: LoopbackDns) -> None:
    admin = await h.tenant("enterprise")
    await claim(h, admin, DOMAIN)
    dns.fail()
    try:
        failed = await h.client.post(f"/admin/sso/domains/{DOMAIN}/verify", headers=admin.headers)
    finally:
        dns.fail(False)
    assert failed.status_code == 400 and error(failed)["code"] == "dns_lookup_failed", failed.text


async def test_every_sso_route_is_documented(h: Harness) -> None:
    paths = (await h.client.get("/openapi.json")).json()["paths"]
    wanted = [(method, path) for method, path, _ in ROUTES] + [
        ("POST", "/sso/discover"),
        ("GET", "/sso/oidc/{tenant_id}/start"),
        ("GET", "/sso/oidc/callback"),
    ]
    for method, path in wanted:
        path = path.replace(DOMAIN, "{domain}").replace("connections/oidc", "connections/{protocol}")
        assert paths[path][method.lower()]["summary"], (method, path)


async def test_single_sign_on_is_a_plan_feature(h: Harness) -> None:
    starter = await h.tenant("starter")
    oidc = {"issuer": "http://127.0.0.1:9/", "client_id": "c", "client_secret": "s"}
    saml = {"idp_metadata_xml": "<EntityDescriptor/>"}
    for method, path, body in (
        ("PUT", "/admin/sso/oidc", oidc),
        ("PUT", "/admin/sso/saml", saml),
        ("PATCH", "/admin/sso", {"enforced": True}),
    ):
        refused = await h.client.request(method, path, json=body, headers=starter.headers)
        assert refused.status_code == 403, (path, refused.text)
        assert error(refused)["code"] == "plan_limit_exceeded" and error(refused)["param"] == "sso"
    # Reading the settings and claiming a domain stay open: they prepare an upgrade.
    assert (await h.client.get("/admin/sso", headers=starter.headers)).status_code == 200
    assert (await claim(h, starter, "starter.example")).status_code == 201
