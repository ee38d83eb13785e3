"""ID-token validation against the live provider's discovery document and key set.

Tokens are minted with the provider's own signing key (which the fixture generated) or forged with
another, and validated by the app's validator, the same object and call the callback uses.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.accounts.sso.service import Sso, sso_of
from agent_server.foundation.errors import AuthFailed, PermissionDenied
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider, signing_key
from tests.accounts.oidc_provider.world import CALLBACK_URL, sso_app
from tests.gateway.conftest import Harness

EMAIL = "erin@tokens.test"


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CALLBACK_URL, {"erin": {"email": EMAIL, "email_verified": True}}) as running_provider:
        yield running_provider


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    with LoopbackDns() as dns:
        async with sso_app(tmp_path, dns) as harness:
            yield harness


class Minted:
    """Claims of a token the provider could have issued for this client and sign-in, at the app's time."""

    def __init__(self, h: Harness, provider: OidcProvider) -> None:
        self.sso: Sso = sso_of(h.app.state.accounts)
        self.provider, self.now = provider, int(h.clock.now())
        self.nonce = secrets.token_urlsafe(16)

    def claims(self, **changes: Any) -> dict[str, Any]:
        claims = {
            "iss": self.provider.issuer,
            "sub": "erin",
            "aud": self.provider.client_id,
            "exp": self.now + 300,
            "iat": self.now,
            "nonce": self.nonce,
            "email": EMAIL,
            "email_verified": True,
        }
        claims.update(changes)
        return {key: value for key, value in claims.items() if value is not None}

    async def validate(self, token: str) -> dict[str, Any]:
        metadata = await self.sso.directory.metadata(self.provider.issuer)
        return await self.sso.id_tokens.validate(metadata, self.provider.client_id, token, self.nonce)

    async def refusal(self, token: str) -> str:
        with pytest.raises(AuthFailed) as refused:
            await self.validate(token)
        assert refused.value.code == "sso_id_token_invalid"
        return refused.value.extra["reason"]


@pytest.fixture
def minted(h: Harness, provider: OidcProvider) -> Minted:
    return Minted(h, provider)


async def test_a_token_of_the_provider_for_this_sign_in_is_accepted(
    minted: Minted, provider: OidcProvider
) -> None:
    claims = await minted.validate(provider.mint(minted.claims()))
    assert claims["email"] == EMAIL and claims["sub"] == "erin"
    both = minted.claims(aud=[provider.client_id, "another"], azp=provider.client_id)
    assert (await minted.validate(provider.mint(both)))["azp"] == provider.client_id


async def test_a_forged_signature_is_refused(minted: Minted, provider: OidcProvider) -> None:
    forger = signing_key(str(provider.key.kid))  # another key under the provider's key id
    assert await minted.refusal(provider.mint(minted.claims(), key=forger)) == "bad_signature"


async def test_a_key_the_provider_does_not_publish_is_refused(minted: Minted, provider: OidcProvider) -> None:
    unknown = signing_key("not-published")
    assert (
        await minted.refusal(provider.mint(minted.claims(), key=unknown, kid="not-published"))
        == "unknown_key"
    )


async def test_rotated_keys_are_fetched_again(tmp_path: Path) -> None:
    users = {"erin": {"email": EMAIL, "email_verified": True}}
    with OidcProvider(CALLBACK_URL, users) as before, LoopbackDns() as dns:
        async with sso_app(tmp_path, dns) as h:
            minted = Minted(h, before)
            await minted.validate(before.mint(minted.claims()))  # discovery and key set are cached now
            before.__exit__()
            # The same issuer restarted with a new key: the cached set lacks its kid, so it is fetched again.
            with OidcProvider(
                CALLBACK_URL, users, port=before.port, key=signing_key("provider-key-2")
            ) as after:
                minted.provider = after
                assert (await minted.validate(after.mint(minted.claims())))["email"] == EMAIL
                assert await minted.refusal(before.mint(minted.claims())) == "unknown_key"


async def test_an_expired_token_is_refused(minted: Minted, provider: OidcProvider) -> None:
    old = minted.claims(iat=minted.now - 3600, exp=minted.now - 61)  # past the minute of leeway
    assert await minted.refusal(provider.mint(old)) == "expired"


async def test_a_token_for_another_client_is_refused(minted: Minted, provider: OidcProvider) -> None:
    assert await minted.refusal(provider.mint(minted.claims(aud="another-client"))) == "wrong_audience"
    several = minted.claims(aud=[provider.client_id, "another"], azp="another")
    assert await minted.refusal(provider.mint(several)) == "wrong_authorized_party"
    no_azp = minted.claims(aud=[provider.client_id, "another"])
    assert await minted.refusal(provider.mint(no_azp)) == "missing_claim"


async def test_a_token_of_another_sign_in_is_refused(minted: Minted, provider: OidcProvider) -> None:
    assert await minted.refusal(provider.mint(minted.claims(nonce="another-sign-in"))) == "wrong_nonce"
    assert await minted.refusal(provider.mint(minted.claims(nonce=None))) == "missing_claim"


async def test_other_claims_and_algorithms_are_checked(minted: Minted, provider: OidcProvider) -> None:
    assert await minted.refusal(provider.mint(minted.claims(iss="http://127.0.0.1:1"))) == "wrong_issuer"
    future = minted.claims(iat=minted.now + 600, exp=minted.now + 900)
    assert await minted.refusal(provider.mint(future)) == "issued_in_future"
    assert await minted.refusal(provider.mint(minted.claims(exp=None))) == "missing_claim"
    assert await minted.refusal("not.a.jwt") == "malformed"
    header, payload, _ = provider.mint(minted.claims()).split(".")
    assert await minted.refusal(f"{header}.{payload}.") == "bad_signature"


async def test_a_verified_email_is_required(minted: Minted, provider: OidcProvider) -> None:
    with pytest.raises(PermissionDenied) as unverified:
        await minted.validate(provider.mint(minted.claims(email_verified=False)))
    assert unverified.value.code == "sso_email_unverified"
    with pytest.raises(PermissionDenied) as missing:
        await minted.validate(provider.mint(minted.claims(email=None)))
    assert missing.value.code == "sso_email_missing"
