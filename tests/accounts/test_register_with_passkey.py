"""Registration that starts with a passkey: options in the answer, the credential kept until the link
is followed, then a passwordless admin who signs in with it."""

from __future__ import annotations

from tests.accounts.authenticator import SoftAuthenticator
from tests.accounts.conftest import World, bearer


async def start(world: World, email: str) -> dict:
    body = {"email": email, "organisation": "Acme", "plan": "starter", "method": "passkey"}
    answer = await world.client.post("/register", json=body)
    assert answer.status_code == 202, answer.text
    return answer.json()


async def test_a_passkey_registration_signs_in_without_a_password(world: World) -> None:
    device = SoftAuthenticator(origin=world.settings.public_base_url)
    started = await start(world, "ann@acme.example")
    credential = device.create(started["passkey"]["options"])
    kept = await world.client.post(
        "/register/passkey", json={"registration_id": started["registration_id"], "credential": credential}
    )
    assert kept.status_code == 200 and kept.json()["status"] == "passkey_saved"
    token = (await world.mails("ann@acme.example"))[-1].token()
    verified = await world.client.post("/register/verify", json={"token": token})
    assert verified.status_code == 201

    listed = await world.client.get("/admin/auth/passkeys", headers=bearer(verified.json()["access_token"]))
    assert [p["name"] for p in listed.json()["data"]] == ["Passkey"]
    # the account is new: the passkey it starts with is no news to tell its owner about
    assert [m.kind for m in await world.mails("ann@acme.example")] == ["verify_email"]
    options = (
        await world.client.post("/admin/auth/passkey/options", json={"email": "ann@acme.example"})
    ).json()
    signed_in = await world.client.post(
        "/admin/auth/passkey", json={"state": options["state"], "credential": device.get(options["options"])}
    )
    assert signed_in.status_code == 200 and signed_in.json()["tenant_id"] == verified.json()["tenant"]["id"]
    no_password = await world.client.post(
        "/admin/auth/login", json={"email": "ann@acme.example", "password": "any-password-at-all"}
    )
    assert no_password.status_code == 401


async def test_a_replayed_or_foreign_registration_credential_is_refused(world: World) -> None:
    device = SoftAuthenticator(origin=world.settings.public_base_url)
    started = await start(world, "bo@acme.example")
    credential = device.create(started["passkey"]["options"])
    body = {"registration_id": started["registration_id"], "credential": credential}
    assert (await world.client.post("/register/passkey", json=body)).status_code == 200
    replay = await world.client.post("/register/passkey", json=body)
    assert replay.status_code == 400
    other = await start(world, "cy@acme.example")
    foreign = SoftAuthenticator(origin="https://evil.example").create(other["passkey"]["options"])
    refused = await world.client.post(
        "/register/passkey", json={"registration_id": other["registration_id"], "credential": foreign}
    )
    assert refused.status_code == 400


async def test_known_and_unknown_emails_get_passkey_options_of_the_same_shape(world: World) -> None:
    await world.registered_admin("dee@acme.example", "Acme")
    before = len(await world.mails("dee@acme.example"))
    known, unknown = await start(world, "dee@acme.example"), await start(world, "eve@acme.example")
    assert known.keys() == unknown.keys() and known["passkey"].keys() == unknown["passkey"].keys()
    assert known["passkey"]["options"].keys() == unknown["passkey"]["options"].keys()
    device = SoftAuthenticator(origin=world.settings.public_base_url)
    saved = [
        await world.client.post(
            "/register/passkey",
            json={
                "registration_id": s["registration_id"],
                "credential": device.create(s["passkey"]["options"]),
            },
        )
        for s in (known, unknown)
    ]
    assert [a.status_code for a in saved] == [200, 200] and saved[0].json().keys() == saved[1].json().keys()
    assert [m.kind for m in await world.mails("dee@acme.example")][before:] == ["already_registered"]
    assert [m.kind for m in await world.mails("eve@acme.example")] == ["verify_email"]


async def test_no_mail_is_sent_until_the_passkey_is_saved(world: World) -> None:
    started = await start(world, "fay@acme.example")
    assert started["status"] == "passkey_needed" and await world.mails("fay@acme.example") == []
    # The browser could not make the passkey (another origin, a closed prompt): nothing was sent.
    foreign = SoftAuthenticator(origin="https://evil.example").create(started["passkey"]["options"])
    refused = await world.client.post(
        "/register/passkey", json={"registration_id": started["registration_id"], "credential": foreign}
    )
    assert refused.status_code == 400 and await world.mails("fay@acme.example") == []
    # Trying again starts again: its passkey saved, one link arrives, and it signs in with the passkey.
    again = await start(world, "fay@acme.example")
    device = SoftAuthenticator(origin=world.settings.public_base_url)
    credential = device.create(again["passkey"]["options"])
    kept = await world.client.post(
        "/register/passkey", json={"registration_id": again["registration_id"], "credential": credential}
    )
    assert kept.status_code == 200 and "We sent a link to fay@acme.example" in kept.json()["message"]
    mails = await world.mails("fay@acme.example")
    assert [m.kind for m in mails] == ["verify_email"]
    verified = await world.client.post("/register/verify", json={"token": mails[0].token()})
    assert verified.status_code == 201
