"""OpenID Connect sign-in end to end, against a real OpenID provider (oidc-provider 9, Node 22) and a
real DNS server on loopback: the browser's part is played over HTTP (redirects, login and consent
forms), the app is the real one over ASGI.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from agent_server.gateway import repository as repo
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL, callback, set_up_sso, sign_in, sso_app, start
from tests.conftest import BASE_URL
from tests.gateway.conftest import Harness

DOMAIN, UNVERIFIED = "acme-sso.test", "unverified-sso.test"
USERS = {
    "alice": {"email": f"alice@{DOMAIN}", "email_verified": True, "name": "Alice"},
    "bob": {"email": f"bob@{DOMAIN}", "email_verified": False},
    "carol": {"email": f"carol@{UNVERIFIED}", "email_verified": True},
    "dave": {"email": f"Dave@{DOMAIN.upper()}", "email_verified": True},
}


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CALLBACK_URL, USERS) as running_provider:
        yield running_provider


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


@pytest.fixture
async def h(tmp_path: Path, dns: LoopbackDns) -> AsyncIterator[Harness]:
    async with sso_app(tmp_path, dns) as harness:
        yield harness


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


async def test_sign_in_creates_the_user_in_the_tenant_once_and_the_session_works(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)

    location = await start(h, admin.id)
    query = parse_qs(urlsplit(location).query)
    assert location.startswith(f"{provider.issuer}/auth?")
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
    assert query["redirect_uri"] == [CALLBACK_URL] and query["client_id"] == [provider.client_id]
    assert query["nonce"][0] and query["state"][0] and "openid" in query["scope"][0].split()

    url = await provider.sign_in(location, "alice")
    answer = await callback(h, url)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    session = answer.json()
    assert session["tenant_id"] == admin.id and session["token_type"] == "bearer"

    user = await repo.find_user(h.gateway.db, f"alice@{DOMAIN}")
    assert user is not None and user.id == session["user_id"] and user.tenant_id == admin.id
    assert user.password_hash is None and user.email_verified_at is not None
    assert user.permissions == ["tenant:admin"]

    keys = await h.client.get(
        "/admin/api-keys", headers={"Authorization": f"Bearer {session['access_token']}"}
    )
    assert keys.status_code == 200, keys.text

    replay = await callback(h, url)
    assert replay.status_code == 400 and error_code(replay) == "SSO_STATE_INVALID"

    _, again = await sign_in(h, provider, admin.id, "alice")  # the second sign-in finds the same user
    assert again.status_code == 200 and again.json()["user_id"] == session["user_id"]


async def test_an_expired_or_unknown_state_is_refused(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    location = await start(h, admin.id)
    url = await provider.sign_in(location, "alice")

    h.clock.advance(h.app.state.services.settings.sso_state_ttl_seconds + 1)
    late = await callback(h, url)
    assert late.status_code == 400 and error_code(late) == "SSO_STATE_INVALID"

    unknown = await h.client.get("/sso/oidc/callback", params={"code": "x", "state": "made-up"})
    assert unknown.status_code == 400 and error_code(unknown) == "SSO_STATE_INVALID"
    missing = await h.client.get("/sso/oidc/callback", params={"code": "x"})
    assert missing.status_code == 400 and error_code(missing) == "SSO_STATE_INVALID"


async def test_the_callback_must_come_from_the_browser_that_started_it(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    started = await h.client.get(f"/sso/oidc/{admin.id}/start")
    cookie = started.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/sso/oidc/callback" in cookie
    url = await provider.sign_in(started.headers["location"], "alice")

    async with httpx.AsyncClient(transport=httpx.ASGITransport(h.app), base_url=BASE_URL) as other_browser:
        stolen = await other_browser.get(url[len(BASE_URL) :])
    assert stolen.status_code == 400 and error_code(stolen) == "SSO_BROWSER_MISMATCH"
    assert await repo.find_user(h.gateway.db, f"alice@{DOMAIN}") is None
    late = await callback(h, url)  # the state was used up by the attempt: the right browser starts again
    assert late.status_code == 400 and error_code(late) == "SSO_STATE_INVALID"


async def test_an_answer_naming_another_issuer_is_refused(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    url = await provider.sign_in(await start(h, admin.id), "alice")
    query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    assert query["iss"] == provider.issuer  # RFC 9207: the provider names itself in its answer
    mixed_up = f"{CALLBACK_URL}?{urlencode({**query, 'iss': 'http://127.0.0.1:1'})}"
    answer = await callback(h, mixed_up)
    assert answer.status_code == 401 and error_code(answer) == "SSO_ISSUER_MISMATCH"


async def test_a_sign_in_cancelled_at_the_provider_is_refused_once(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    url = await provider.sign_in(await start(h, admin.id), "alice", cancel=True)
    assert parse_qs(urlsplit(url).query)["error"] == ["access_denied"]

    denied = await callback(h, url)
    assert denied.status_code == 403 and error_code(denied) == "SSO_ACCESS_DENIED"
    assert "cancelled or refused" in denied.json()["error"]["message"]
    again = await callback(h, url)
    assert again.status_code == 400 and error_code(again) == "SSO_STATE_INVALID"


async def test_an_address_the_provider_has_not_verified_is_refused(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    _, answer = await sign_in(h, provider, admin.id, "bob")
    assert answer.status_code == 403 and error_code(answer) == "SSO_EMAIL_UNVERIFIED"
    assert await repo.find_user(h.gateway.db, f"bob@{DOMAIN}") is None


async def test_a_domain_claimed_but_not_verified_signs_nobody_in(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    claimed = await h.client.post("/admin/sso/domains", json={"domain": UNVERIFIED}, headers=admin.headers)
    assert claimed.status_code == 201 and claimed.json()["verified"] is False

    _, answer = await sign_in(h, provider, admin.id, "carol")
    assert answer.status_code == 403 and error_code(answer) == "SSO_DOMAIN_NOT_VERIFIED"
    assert await repo.find_user(h.gateway.db, f"carol@{UNVERIFIED}") is None


async def test_a_user_of_another_tenant_is_never_moved(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin, other = await h.tenant("enterprise"), await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    now = h.clock.now()
    await repo.add_user(h.gateway.db, repo.new_user(now, other.id, f"dave@{DOMAIN}", None, ["tenant:admin"]))

    _, answer = await sign_in(h, provider, admin.id, "dave")  # the provider says Dave@ACME-SSO.TEST
    assert answer.status_code == 403 and error_code(answer) == "SSO_USER_ELSEWHERE"
    user = await repo.find_user(h.gateway.db, f"dave@{DOMAIN}")
    assert user is not None and user.tenant_id == other.id


async def test_a_platform_admin_is_never_signed_in_by_a_tenants_provider(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    """A tenant admin controls the tenant's provider and DNS: it must not yield platform rights."""
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    operator = repo.new_user(
        h.clock.now(), admin.id, f"alice@{DOMAIN}", None, ["platform:admin", "tenant:admin"]
    )
    await repo.add_user(h.gateway.db, operator)

    url, answer = await sign_in(h, provider, admin.id, "alice")

    assert answer.status_code == 403 and error_code(answer) == "SSO_PLATFORM_ADMIN", answer.text
    message = answer.json()["error"]["message"]
    assert "password" in message and "passkey" in message
    assert "access_token" not in answer.text
    user = await repo.find_user(h.gateway.db, f"alice@{DOMAIN}")
    assert user is not None and user.permissions == ["platform:admin", "tenant:admin"]
    assert (await callback(h, url)).status_code == 400  # the state was used up


async def test_client_secret_post_is_used_when_the_provider_offers_only_that(
    tmp_path: Path, dns: LoopbackDns
) -> None:
    with OidcProvider(CALLBACK_URL, USERS, auth_methods="client_secret_post") as post_only:
        async with sso_app(tmp_path, dns) as h:
            admin = await h.tenant("enterprise")
            await set_up_sso(h, admin, post_only, dns, DOMAIN)
            _, answer = await sign_in(h, post_only, admin.id, "alice")
            assert answer.status_code == 200, answer.text

            wrong = await h.client.put(
                "/admin/sso/oidc",
                json={"issuer": post_only.issuer, "client_id": post_only.client_id, "client_secret": "wrong"},
                headers=admin.headers,
            )
            assert wrong.status_code == 200
            _, refused = await sign_in(h, post_only, admin.id, "alice")
            assert refused.status_code == 401 and error_code(refused) == "SSO_CODE_REFUSED"
            assert refused.json()["error"]["provider_error"] == "invalid_client"


@pytest.mark.redis
@pytest.mark.postgres
async def test_sign_in_on_postgresql_and_redis(
    tmp_path: Path, provider: OidcProvider, dns: LoopbackDns, postgres_url: str, redis_url: str
) -> None:
    shared = {"database_url": postgres_url, "redis_url": redis_url, "kv_prefix": f"sso-{uuid.uuid4().hex}:"}
    async with sso_app(tmp_path, dns, **shared) as h:
        admin = await h.tenant("enterprise")
        await set_up_sso(h, admin, provider, dns, DOMAIN)
        url, answer = await sign_in(h, provider, admin.id, "alice")
        assert answer.status_code == 200 and answer.json()["tenant_id"] == admin.id, answer.text
        replay = await callback(h, url)  # the state was taken from Redis (GETDEL): it works once
        assert replay.status_code == 400 and error_code(replay) == "SSO_STATE_INVALID"
        enforced = await h.client.patch("/admin/sso", json={"enforced": True}, headers=admin.headers)
        assert enforced.status_code == 200
        assert (await h.client.get("/admin/sso", headers=admin.headers)).status_code == 401  # ended
        _, again = await sign_in(h, provider, admin.id, "alice")
        headers = {"Authorization": f"Bearer {again.json()['access_token']}"}
        dropped = await h.client.delete(f"/admin/sso/domains/{DOMAIN}", headers=headers)
        assert dropped.status_code == 409 and error_code(dropped) == "sso_enforced"
