"""``POST /agent/auth`` with an ID-JAG: signed with the key of the OpenID provider the tests run on
loopback (tests/accounts/oidc_provider, whose key set the app fetches), for an Enterprise tenant that
verified its domain and connected that provider. A valid assertion gets a key of the tenant for the
asserted person (created just in time) that the ``openai`` SDK uses at once; each way an assertion
can be wrong is its own refusal."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey
from sqlalchemy import select

from agent_server.gateway.tables import User
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider, signing_key
from tests.accounts.oidc_provider.world import CALLBACK_URL, set_up_sso, sso_app
from tests.agent_auth.conftest import sdk
from tests.conftest import BASE_URL
from tests.gateway.conftest import Harness, TenantAdmin

DOMAIN = "agents-sso.test"
CLIENT = "https://agent.example/client"


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CALLBACK_URL, {}) as running_provider:
        yield running_provider


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


@dataclass
class Setup:
    h: Harness
    admin: TenantAdmin
    provider: OidcProvider

    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(self.h.clock.now())
        claims = {
            "iss": self.provider.issuer,
            "sub": "person-1",
            "aud": BASE_URL,
            "client_id": CLIENT,
            "email": f"ada@{DOMAIN}",
            "iat": now,
            "exp": now + 300,
            "jti": secrets.token_urlsafe(12),
        }
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def assertion(self, key: RSAKey | None = None, typ: str = "oauth-id-jag+jwt", **changes: Any) -> str:
        header = {"alg": "RS256", "kid": str(self.provider.key.kid), "typ": typ}
        return jwt.encode(header, self.claims(**changes), key or self.provider.key)

    async def send(self, assertion: str) -> httpx.Response:
        body = {"identity_type": "identity_assertion", "assertion": assertion}
        return await self.h.client.post("/agent/auth", json=body)

    async def refusal(self, assertion: str) -> tuple[int, str]:
        answer = await self.send(assertion)
        return answer.status_code, answer.json()["error"]["code"]


@pytest.fixture
async def setup(tmp_path: Path, dns: LoopbackDns, provider: OidcProvider) -> AsyncIterator[Setup]:
    # Each test's tenant verifies the domain afresh, so the loopback DNS's record is its own.
    async with sso_app(tmp_path, dns) as h:
        admin = await h.tenant("enterprise")
        await set_up_sso(h, admin, provider, dns, DOMAIN)
        yield Setup(h, admin, provider)


async def test_an_assertion_gets_a_key_of_the_tenant_for_the_person(setup: Setup) -> None:
    answer = await setup.send(setup.assertion())
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["scopes"] == ["chat", "embeddings", "files", "models"]  # Enterprise's, without admin
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    expected = datetime.fromtimestamp(setup.h.clock.now(), UTC) + timedelta(hours=1)
    assert abs((expires - expected).total_seconds()) < 2
    async with sdk(setup.h, body["api_key"]) as client:
        reply = await client.chat.completions.create(
            model="agentgate-mock-small", messages=[{"role": "user", "content": "hi from the agent"}]
        )
        assert "hi from the agent" in (reply.choices[0].message.content or "")
    async with setup.h.gateway.db.session() as session:
        person = (await session.execute(select(User).where(User.email == f"ada@{DOMAIN}"))).scalars().one()
    assert person.tenant_id == setup.admin.id and person.password_hash is None
    keys = (await setup.h.client.get("/admin/api-keys", headers=setup.admin.headers)).json()["data"]
    (agent_key,) = [k for k in keys if k["name"] == f"agent for ada@{DOMAIN}"]
    assert agent_key["metadata"] == {"agent_client_id": CLIENT, "user_id": person.id, "subject": "person-1"}
    audit = (await setup.h.client.get("/admin/audit", headers=setup.admin.headers)).json()["data"]
    (entry,) = [e for e in audit if e["target"] == agent_key["id"]]
    assert (entry["action"], entry["actor"], entry["details"]["via"]) == (
        "api_key.create",
        person.id,
        "identity_assertion",
    )


async def test_an_assertion_is_used_once(setup: Setup) -> None:
    assertion = setup.assertion()
    assert (await setup.send(assertion)).status_code == 201
    assert await setup.refusal(assertion) == (401, "assertion_replayed")


async def test_wrong_issuer_audience_signature_or_time_are_refused(setup: Setup) -> None:
    forger = signing_key(str(setup.provider.key.kid))  # another key under the provider's key id
    unknown = signing_key("not-published")
    now = int(setup.h.clock.now())
    cases = {
        "assertion_issuer_untrusted": setup.assertion(iss="http://127.0.0.1:1"),
        "assertion_audience_mismatch": setup.assertion(aud="https://another-service.example"),
        "assertion_signature_invalid": setup.assertion(key=forger),
        "assertion_expired": setup.assertion(iat=now - 600, exp=now - 61),
        "assertion_not_yet_valid": setup.assertion(iat=now + 600, exp=now + 900),
    }
    for code, assertion in cases.items():
        assert await setup.refusal(assertion) == (401, code), code
    header = {"alg": "RS256", "kid": "not-published", "typ": "oauth-id-jag+jwt"}
    assert await setup.refusal(jwt.encode(header, setup.claims(), unknown)) == (
        401,
        "assertion_signature_invalid",
    )
    elsewhere = setup.assertion(email=f"ada@not-{DOMAIN}")  # a domain this tenant did not verify
    assert await setup.refusal(elsewhere) == (401, "assertion_issuer_untrusted")


async def test_what_is_not_an_id_jag_is_a_400(setup: Setup) -> None:
    now = int(setup.h.clock.now())
    for assertion in (
        "not-a-jwt",
        setup.assertion(typ="JWT"),  # an ID token, say: not meant for this exchange
        setup.assertion(jti=None),
        setup.assertion(client_id=None),
        setup.assertion(exp=now + 7200),
    ):
        answer = await setup.send(assertion)
        assert answer.status_code == 400, answer.text
        assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == (
            "assertion_malformed",
            "assertion",
        )


async def test_a_person_whose_role_manages_no_keys_gets_none(setup: Setup) -> None:
    connected = await setup.h.client.put(
        "/admin/sso/oidc",
        json={"issuer": setup.provider.issuer, "client_id": setup.provider.client_id, "jit_permissions": []},
        headers=setup.admin.headers,
    )
    assert connected.status_code == 200, connected.text
    viewer = setup.assertion(email=f"vi-{uuid.uuid4().hex[:6]}@{DOMAIN}")
    assert await setup.refusal(viewer) == (403, "role_not_allowed")


async def test_the_token_endpoint_takes_the_same_assertion_as_a_jwt_bearer_grant(setup: Setup) -> None:
    registration = {
        "client_name": "Assertion agent",
        "redirect_uris": ["http://127.0.0.1:9/callback"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
    }
    client_id = (await setup.h.client.post("/oauth/register", json=registration)).json()["client_id"]

    async def grant(assertion: str, client: str = client_id) -> httpx.Response:
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": assertion,
            "client_id": client,
        }
        return await setup.h.client.post("/oauth/token", data=form)

    assertion = setup.assertion(client_id=client_id)
    answer = await grant(assertion)
    assert answer.status_code == 200, answer.text
    token = answer.json()
    assert "refresh_token" not in token and token["scope"].startswith("chat embeddings files models")
    async with sdk(setup.h, token["access_token"]) as client:
        assert (await client.models.list()).data
    replayed = (await grant(assertion)).json()
    assert replayed["error"] == "invalid_grant" and "assertion_replayed" in replayed["error_description"]
    other = (await grant(setup.assertion(client_id="https://another-agent.example/"))).json()
    assert other["error"] == "invalid_grant" and "client_id" in other["error_description"]
    wrong = (await grant(setup.assertion(client_id=client_id, aud="https://elsewhere.example"))).json()
    assert wrong["error"] == "invalid_grant" and "assertion_audience_mismatch" in wrong["error_description"]
