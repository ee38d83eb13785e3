"""A signed-in user's passkeys over HTTP (several, named, renamed, removed; adding one needs a recent
sign-in and tells the user by mail), the relying party from settings, and the interface the
registration flow calls (creation, verification, ``store``)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select

from agent_server.accounts.passkey_relying_party import RelyingParty
from agent_server.accounts.passkey_tables import PasskeyCredential
from agent_server.accounts.sessions import RECENT_SIGN_IN_SECONDS
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway import repository as repo
from tests.accounts import test_passkeys as passkey_world
from tests.accounts.authenticator import SoftAuthenticator, b64url
from tests.accounts.test_passkeys import Admin, PasskeyWorld, PasskeyWorldFactory, error_code

make_pk, pk = passkey_world.make_pk, passkey_world.pk  # the fixtures, shared with test_passkeys.py

VIEW_FIELDS = {"id", "object", "name", "created_at", "last_used_at", "transports", "backed_up"}


async def test_several_named_passkeys_can_be_listed_renamed_and_removed(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    laptop = await pk.add_passkey(admin, "Laptop")
    pk.clock.advance(1)
    phone_device = SoftAuthenticator(pk.origin, backup_eligible=False, backed_up=False)
    phone = await pk.add_passkey(admin, "Phone", device=phone_device)

    listed = (await pk.client.get("/admin/auth/passkeys", headers=admin.headers)).json()["data"]
    assert [p["name"] for p in listed] == ["Laptop", "Phone"]
    assert all(set(p) == VIEW_FIELDS for p in listed)  # never the public key, handle or counter
    assert listed[0]["id"].startswith("pk_") and listed[0]["transports"] == ["hybrid", "internal"]
    assert (listed[0]["backed_up"], listed[1]["backed_up"]) == (True, False)
    assert listed[0]["last_used_at"] is None

    renamed = await pk.client.patch(
        f"/admin/auth/passkeys/{laptop['id']}", json={"name": "  Work   laptop "}, headers=admin.headers
    )
    assert renamed.status_code == 200 and renamed.json()["name"] == "Work laptop"

    removed = await pk.client.delete(f"/admin/auth/passkeys/{phone['id']}", headers=admin.headers)
    assert removed.status_code == 200 and removed.json() == {
        "id": phone["id"],
        "object": "passkey",
        "deleted": True,
    }
    listed = (await pk.client.get("/admin/auth/passkeys", headers=admin.headers)).json()["data"]
    assert [p["name"] for p in listed] == ["Work laptop"]
    gone = await pk.sign_in(admin.email, device=phone_device, credential=phone_device.credentials[0])
    assert gone.status_code == 401 and "not registered" in gone.json()["error"]["message"]
    assert (await pk.sign_in(admin.email)).status_code == 200


async def test_new_options_exclude_the_users_passkeys_and_keep_one_user_handle(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    first = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()["options"]
    assert first["excludeCredentials"] == []
    assert first["authenticatorSelection"]["userVerification"] == "required"
    await pk.add_passkey(admin)

    second = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()["options"]

    assert [c["id"] for c in second["excludeCredentials"]] == [b64url(pk.device.credentials[0].id)]
    assert second["user"]["id"] == first["user"]["id"]
    assert second["user"]["name"] == admin.email


async def test_another_users_passkey_answers_404(pk: PasskeyWorld) -> None:
    owner, stranger = await pk.admin(), await pk.admin()
    passkey = await pk.add_passkey(owner)

    for method, body in (("PATCH", {"name": "mine now"}), ("DELETE", None)):
        answer = await pk.client.request(
            method, f"/admin/auth/passkeys/{passkey['id']}", json=body, headers=stranger.headers
        )
        assert answer.status_code == 404 and error_code(answer) == "passkey_not_found"
    assert (await pk.client.get("/admin/auth/passkeys", headers=stranger.headers)).json()["data"] == []
    missing = await pk.client.delete("/admin/auth/passkeys/pk_missing", headers=owner.headers)
    assert missing.status_code == 404
    assert (await pk.client.get("/admin/auth/passkeys", headers=owner.headers)).json()["data"][0][
        "name"
    ] == "Laptop"


async def test_the_options_path_is_not_a_passkey_id(pk: PasskeyWorld) -> None:
    # /admin/auth/passkeys/options is its own resource (POST): {passkey_id} never takes it, so the
    # other methods there are 405 with Allow: POST, not a passkey "options" that is not found.
    admin = await pk.admin()
    for method in ("OPTIONS", "PATCH", "DELETE"):
        answer = await pk.client.request(
            method, "/admin/auth/passkeys/options", json={"name": "x"}, headers=admin.headers
        )
        assert answer.status_code == 405 and answer.headers["allow"] == "POST", answer.text
        assert error_code(answer) == "method_not_allowed"


async def test_a_creation_answer_counts_once_and_a_passkey_registers_once(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    options = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()["options"]
    credential = pk.device.create(options)
    body = {"credential": credential, "name": "Laptop"}
    assert (await pk.client.post("/admin/auth/passkeys", json=body, headers=admin.headers)).status_code == 201

    replayed = await pk.client.post("/admin/auth/passkeys", json=body, headers=admin.headers)
    assert replayed.status_code == 400 and error_code(replayed) == "passkey_ceremony_expired"

    # the same credential under fresh options (a client ignoring excludeCredentials)
    fresh = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()["options"]
    credential["response"]["clientDataJSON"] = b64url(
        pk.device.client_data("webauthn.create", fresh["challenge"], None)
    )
    again = await pk.client.post("/admin/auth/passkeys", json=body, headers=admin.headers)
    assert again.status_code == 409 and error_code(again) == "passkey_already_registered"


async def test_a_creation_answer_from_another_origin_is_refused(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    options = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()["options"]

    credential = pk.device.create(options, origin="https://phishing.example")
    answer = await pk.client.post(
        "/admin/auth/passkeys", json={"credential": credential}, headers=admin.headers
    )

    assert answer.status_code == 400 and "origin" in answer.json()["error"]["message"]
    assert (await pk.client.get("/admin/auth/passkeys", headers=admin.headers)).json()["data"] == []


async def test_adding_a_passkey_needs_a_sign_in_of_the_last_ten_minutes(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    pk.clock.advance(RECENT_SIGN_IN_SECONDS)  # exactly 10 minutes old: still recent
    options = await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)
    assert options.status_code == 200, options.text
    credential = pk.device.create(options.json()["options"])

    pk.clock.advance(60)  # 11 minutes: the token is still valid (an hour), its ceremony still waits

    for path, body in (
        ("/admin/auth/passkeys/options", None),
        ("/admin/auth/passkeys", {"credential": credential, "name": "Stolen"}),
    ):
        refused = await pk.client.post(path, json=body, headers=admin.headers)
        assert refused.status_code == 403, (path, refused.text)
        assert error_code(refused) == "recent_sign_in_required"
        assert "add a passkey" in refused.json()["error"]["message"]
    listed = await pk.client.get("/admin/auth/passkeys", headers=admin.headers)  # the token still works
    assert listed.status_code == 200 and listed.json()["data"] == []
    assert [m for m in await pk.mails() if m.kind == "passkey_added"] == []

    # Signed in again: the refusal left the ceremony alone, so the same answer now completes it.
    fresh = Admin(admin.user_id, admin.tenant_id, admin.email, await pk.login(admin.email))
    body = {"credential": credential, "name": "Laptop"}
    added = await pk.client.post("/admin/auth/passkeys", json=body, headers=fresh.headers)
    assert added.status_code == 201 and added.json()["name"] == "Laptop"
    assert (await pk.add_passkey(fresh, "Phone", device=SoftAuthenticator(pk.origin)))["name"] == "Phone"


async def test_adding_a_passkey_queues_a_notice_to_the_user(pk: PasskeyWorld) -> None:
    admin, other = await pk.admin(), await pk.admin()

    added = await pk.add_passkey(admin, "Work laptop")

    notices = [m for m in await pk.mails() if m.kind == "passkey_added"]
    assert [m.to for m in notices] == [admin.email]
    text = notices[0].text
    day = utc(added["created_at"]).strftime("%Y-%m-%d")
    assert f'A passkey named "Work laptop" was added to your account on {day}' in text
    assert "If it was not you, remove it and reset your password." in text
    assert notices[0].subject == "A passkey was added to your agentgate account"
    assert await pk.mails(other.email) == []


async def test_management_needs_an_admin_token(pk: PasskeyWorld) -> None:
    for method, path in (("POST", "/admin/auth/passkeys/options"), ("GET", "/admin/auth/passkeys")):
        answer = await pk.client.request(method, path)
        assert answer.status_code == 401 and error_code(answer) == "invalid_token"


async def test_the_relying_party_comes_from_settings(make_pk: PasskeyWorldFactory) -> None:
    async with make_pk() as pk:  # defaults: the public host, the company name, the public origin
        admin = await pk.admin()
        options = (await pk.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()
        assert options["options"]["rp"] == {"id": "127.0.0.1", "name": "agentgate"}
        assert pk.passkeys.rp.origins == ("http://127.0.0.1:8000",)

    configured = {
        "webauthn_rp_id": "example.com",
        "webauthn_rp_name": "Example Gateway",
        "webauthn_origins": "https://app.example.com,https://example.com",
    }
    async with make_pk(origin="https://app.example.com", **configured) as pk:
        admin = await pk.admin()
        await pk.add_passkey(admin)
        assert pk.device.credentials[0].rp_id == "example.com"
        assert (await pk.sign_in(admin.email)).status_code == 200
        refused = await pk.sign_in(admin.email, origin="http://127.0.0.1:8000")
        assert refused.status_code == 401 and "origin" in refused.json()["error"]["message"]


async def test_the_registration_interface_stores_in_the_callers_transaction(pk: PasskeyWorld) -> None:
    """What the registration flow does: options under its state key, verification, then ``store``
    in the transaction that creates the user; the passkey then signs in by itself (discoverable)."""
    handle = b"reg_0123456789abcdef"
    options = await pk.passkeys.creation_options(
        state_key="reg:test", user_handle=handle, user_name="new@example.com", display_name="new@example.com"
    )
    new = await pk.passkeys.verify_creation(state_key="reg:test", credential=pk.device.create(options))
    new = json.loads(json.dumps(new))  # kept in a JSON column until the e-mail link is followed

    db, now = pk.app.state.services.db, pk.clock.now()
    tenant = await repo.create_tenant(db, now, "Registered Org", "starter")
    async with db.session() as session:
        user = repo.new_user(now, tenant.id, "new@example.com", None, ["tenant:admin"])
        session.add(user)
        stored = pk.passkeys.store(session, user.id, new, "Passkey")
    async with db.session() as session:
        row = (await session.execute(select(PasskeyCredential))).scalars().one()
    assert (row.id, bytes(row.user_handle), row.name) == (stored.id, handle, "Passkey")

    answer = await pk.sign_in()
    assert answer.status_code == 200 and answer.json()["user_id"] == user.id


def test_default_origins_are_those_browsers_send(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        public_base_url="https://GW.example.com:443/api",
        app_url="https://app.example.com:8443/",
    )
    rp = RelyingParty.from_settings(settings, "Company")
    assert (rp.id, rp.name) == ("gw.example.com", "Company")
    assert rp.origins == ("https://gw.example.com", "https://app.example.com:8443")
