"""The admin JWT: 40 ways a token can be wrong, each refused with 401, and the leeway at each edge."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from agent_server.gateway.tokens import LEEWAY_SECONDS, signing_secret
from tests.gateway.conftest import Harness

Forge = Callable[[dict[str, Any]], str]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(value: dict[str, Any]) -> str:
    return b64(json.dumps(value).encode())


class Tokens:
    """Valid claims of a real admin, and ways to sign variations of them."""

    def __init__(self, harness: Harness, token: str) -> None:
        self.secret = signing_secret(harness.gateway.services.settings)
        self.claims = jwt.decode(token, options={"verify_signature": False})
        self.now = int(harness.clock.now())
        self.valid = token

    def sign(
        self, claims: dict[str, Any], *, headers: dict[str, Any] | None = None, alg: str = "HS256"
    ) -> str:
        return jwt.encode(claims, self.secret, algorithm=alg, headers={"typ": "at+jwt", **(headers or {})})

    def raw(self, header: dict[str, Any], claims: dict[str, Any], key: bytes | None = None) -> str:
        """A token assembled by hand: any header, HS256 over it with ``key`` (none: no signature)."""
        signing_input = f"{segment(header)}.{segment(claims)}"
        if key is None:
            return signing_input + "."
        return f"{signing_input}.{b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest())}"

    def with_(self, **changes: Any) -> str:
        return self.sign({**self.claims, **changes})

    def without(self, name: str) -> str:
        return self.sign({k: v for k, v in self.claims.items() if k != name})


def refused_tokens(t: Tokens, api_key: str) -> dict[str, str]:
    header, payload, signature = t.valid.split(".")
    other_signature = t.with_(jti="someone-else").split(".")[2]
    now = t.now
    return {
        "alg none": t.raw({"alg": "none", "typ": "at+jwt"}, t.claims),
        "alg None": t.raw({"alg": "None", "typ": "at+jwt"}, t.claims),
        "alg none with a signature": t.raw({"alg": "none", "typ": "at+jwt"}, t.claims, t.secret),
        "alg HS384": t.sign(t.claims, alg="HS384"),
        "alg HS512": t.sign(t.claims, alg="HS512"),
        "alg RS256 header over an HMAC": t.raw({"alg": "RS256", "typ": "at+jwt"}, t.claims, t.secret),
        "alg missing": t.raw({"typ": "at+jwt"}, t.claims, t.secret),
        "wrong secret": jwt.encode(t.claims, "x" * 64, algorithm="HS256", headers={"typ": "at+jwt"}),
        "empty signature": f"{header}.{payload}.",
        "another token's signature": f"{header}.{payload}.{other_signature}",
        "payload raised to platform admin": f"{header}.{segment({**t.claims, 'permissions': ['platform:admin']})}.{signature}",
        "payload of another tenant": f"{header}.{segment({**t.claims, 'tenant': 'ten_other'})}.{signature}",
        "typ missing": jwt.encode(t.claims, t.secret, algorithm="HS256"),
        "typ JWT": t.sign(t.claims, headers={"typ": "JWT"}),
        "typ in upper case": t.sign(t.claims, headers={"typ": "AT+JWT"}),
        "audience of another service": t.with_(aud="someone-else:admin"),
        "audience list without ours": t.with_(aud=["a", "b"]),
        "no audience": t.without("aud"),
        "another issuer": t.with_(iss="https://evil.example"),
        "no issuer": t.without("iss"),
        "no subject": t.without("sub"),
        "no expiry": t.without("exp"),
        "no issue time": t.without("iat"),
        "not valid for another hour (nbf)": t.with_(nbf=now + 3600),
        "not valid for 31 s (nbf past the leeway)": t.with_(nbf=now + LEEWAY_SECONDS + 1),
        "issued an hour from now": t.with_(iat=now + 3600),
        "expiry as a string": t.with_(exp=str(now + 600)),
        "issue time as a string": t.with_(iat=str(now)),
        "nbf as a string": t.with_(nbf=str(now)),
        "expiry as a boolean": t.with_(exp=True),
        "expiry as a fraction": t.with_(exp=now + 600.5),
        "no tenant": t.without("tenant"),
        "tenant as a number": t.with_(tenant=7),
        "permissions as a string": t.with_(permissions="platform:admin"),
        "permissions with a number": t.with_(permissions=["tenant:admin", 1]),
        "version as a string": t.with_(ver="0"),
        "version as a boolean": t.with_(ver=False),
        "garbage": "not-a-jwt",
        "two segments": f"{header}.{payload}",
        "an API key": api_key,
    }


@pytest.fixture
async def tokens(harness: Harness) -> tuple[Tokens, str]:
    admin = await harness.tenant()
    _, key = await harness.key(admin)
    return Tokens(harness, admin.token), key


async def test_forty_wrong_tokens_are_each_refused_with_401(
    harness: Harness, tokens: tuple[Tokens, str]
) -> None:
    t, api_key = tokens
    cases = refused_tokens(t, api_key)
    assert len(cases) == 40
    accepted = await harness.client.get("/admin/api-keys", headers={"Authorization": f"Bearer {t.valid}"})
    assert accepted.status_code == 200  # the unmodified token works, so each refusal is the change
    for name, token in cases.items():
        response = await harness.client.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 401, name
        assert response.json()["error"]["code"] == "invalid_token", name
        assert response.headers["WWW-Authenticate"].startswith("Bearer "), name


async def test_an_expired_token_is_refused_as_expired_past_the_leeway(
    harness: Harness, tokens: tuple[Tokens, str]
) -> None:
    t, _ = tokens
    late = await harness.client.get(
        "/admin/api-keys", headers={"Authorization": f"Bearer {t.with_(exp=t.now - LEEWAY_SECONDS - 1)}"}
    )
    assert late.status_code == 401 and late.json()["error"]["code"] == "expired_token"


async def test_clock_skew_within_the_leeway_is_accepted(harness: Harness, tokens: tuple[Tokens, str]) -> None:
    t, _ = tokens
    edge = LEEWAY_SECONDS - 1
    for claims in ({"nbf": t.now + edge}, {"iat": t.now + edge}, {"exp": t.now - edge}, {"nbf": t.now}):
        response = await harness.client.get(
            "/admin/api-keys", headers={"Authorization": f"Bearer {t.with_(**claims)}"}
        )
        assert response.status_code == 200, claims


async def test_a_token_ended_by_sign_out_is_refused(harness: Harness, tokens: tuple[Tokens, str]) -> None:
    t, _ = tokens
    headers = {"Authorization": f"Bearer {t.valid}"}
    assert (await harness.client.post("/admin/auth/logout", headers=headers)).status_code == 200
    response = await harness.client.get("/admin/api-keys", headers=headers)
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_token"
