"""Passkey sign-ins that must fail, over HTTP: replays, other origins and RP ids, counters that do
not move forward, late or unverified answers, malformed ones, and too many anonymous starts."""

from __future__ import annotations

from typing import Any

import pytest

from agent_server.accounts.passkeys import CEREMONY_SECONDS
from tests.accounts import test_passkeys as passkey_world
from tests.accounts.authenticator import SoftAuthenticator
from tests.accounts.test_passkeys import PasskeyWorld, error_code

make_pk, pk = passkey_world.make_pk, passkey_world.pk  # the fixtures, shared with test_passkeys.py


async def test_a_replayed_assertion_is_refused(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)
    started = await pk.sign_in_options(admin.email)
    body = {"state": started["state"], "credential": pk.device.get(started["options"])}
    assert (await pk.client.post("/admin/auth/passkey", json=body)).status_code == 200

    again = await pk.client.post("/admin/auth/passkey", json=body)
    assert again.status_code == 400 and error_code(again) == "passkey_ceremony_expired"
    # the same assertion under a fresh state: its challenge is not that state's challenge
    fresh = await pk.sign_in_options(admin.email)
    replayed = await pk.client.post(
        "/admin/auth/passkey", json={"state": fresh["state"], "credential": body["credential"]}
    )
    assert replayed.status_code == 401 and error_code(replayed) == "passkey_rejected"
    assert "challenge" in replayed.json()["error"]["message"]


async def test_an_assertion_made_for_another_origin_is_refused(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)

    answer = await pk.sign_in(admin.email, origin="https://phishing.example")

    assert answer.status_code == 401 and error_code(answer) == "passkey_rejected"
    assert "origin" in answer.json()["error"]["message"]
    assert answer.headers["www-authenticate"].startswith("Bearer ")


async def test_a_wrong_relying_party_id_is_refused_at_creation_and_at_sign_in(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    options = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()["options"]
    credential = pk.device.create(options, rp_id="other.example")
    created = await pk.client.post(
        "/admin/auth/passkeys", json={"credential": credential}, headers=admin.headers
    )
    assert created.status_code == 400 and error_code(created) == "passkey_invalid"
    assert "RP ID" in created.json()["error"]["message"]

    await pk.add_passkey(admin)
    answer = await pk.sign_in(admin.email, rp_id="other.example", credential=pk.device.credentials[-1])
    assert answer.status_code == 401 and "RP ID" in answer.json()["error"]["message"]


async def test_a_sign_counter_that_does_not_move_forward_is_refused(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)
    assert (await pk.sign_in(admin.email, counter=5)).status_code == 200

    backwards = await pk.sign_in(admin.email, counter=3)
    assert backwards.status_code == 401 and "sign count" in backwards.json()["error"]["message"]
    assert (await pk.sign_in(admin.email, counter=5)).status_code == 401  # equal: a clone, not a use
    assert (await pk.sign_in(admin.email, counter=6)).status_code == 200


async def test_a_passkey_answers_only_for_the_email_it_was_asked_for(pk: PasskeyWorld) -> None:
    first, second = await pk.admin(), await pk.admin()
    await pk.add_passkey(first)
    second_device = SoftAuthenticator(pk.origin)
    await pk.add_passkey(second, device=second_device)

    started = await pk.sign_in_options(first.email)
    credential = second_device.get(started["options"], credential=second_device.credentials[0])
    answer = await pk.client.post(
        "/admin/auth/passkey", json={"state": started["state"], "credential": credential}
    )
    assert answer.status_code == 401 and error_code(answer) == "passkey_rejected"

    unknown = await pk.sign_in_options("nobody@example.com")
    credential = pk.device.get(unknown["options"], credential=pk.device.credentials[0])
    answer = await pk.client.post(
        "/admin/auth/passkey", json={"state": unknown["state"], "credential": credential}
    )
    assert answer.status_code == 401


async def test_a_ceremony_older_than_its_lifetime_is_refused(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)
    started = await pk.sign_in_options(admin.email)
    credential = pk.device.get(started["options"])

    pk.clock.advance(CEREMONY_SECONDS + 1)

    late = await pk.client.post(
        "/admin/auth/passkey", json={"state": started["state"], "credential": credential}
    )
    assert late.status_code == 400 and error_code(late) == "passkey_ceremony_expired"
    assert late.json()["error"]["param"] == "state"


async def test_user_verification_is_required(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)

    answer = await pk.sign_in(admin.email, verified=False)

    assert answer.status_code == 401 and "verification" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "credential",
    [
        {},
        {"id": "x", "rawId": "x", "type": "public-key", "response": {}},
        {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": "!!"}},
        {"id": 1, "rawId": [], "type": "nope", "response": "x"},
    ],
)
async def test_malformed_answers_are_refused_cleanly(pk: PasskeyWorld, credential: dict[str, Any]) -> None:
    admin = await pk.admin()
    await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)
    created = await pk.client.post(
        "/admin/auth/passkeys", json={"credential": credential}, headers=admin.headers
    )
    assert created.status_code == 400 and error_code(created) == "passkey_invalid"

    started = await pk.sign_in_options()
    answer = await pk.client.post(
        "/admin/auth/passkey", json={"state": started["state"], "credential": credential}
    )
    assert answer.status_code == 401 and error_code(answer) == "passkey_rejected"


async def test_sign_in_options_are_limited_per_client(pk: PasskeyWorld) -> None:
    for _ in range(30):
        await pk.sign_in_options()

    refused = await pk.client.post("/admin/auth/passkey/options", json={})

    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
