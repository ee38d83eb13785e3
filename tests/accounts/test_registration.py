"""Registration over HTTP: the link, the trial, no account enumeration, limits, taken names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from agent_server.gateway.tables import Tenant, User
from tests.accounts.conftest import PASSWORD, World, bearer


async def test_the_link_creates_the_tenant_with_a_trial_and_signs_the_admin_in(world: World) -> None:
    answer = await world.register("Ann@Acme.example", "Acme")
    assert answer.status_code == 202
    assert answer.json()["status"] == "verification_sent" and answer.json()["email"] == "ann@acme.example"
    (mail,) = await world.mails("ann@acme.example")
    assert mail.kind == "verify_email" and "Acme" in mail.text and "14-day trial" in mail.text
    token = mail.token()
    assert mail.text.count(f"{world.settings.public_base_url}/app/register/verify?token={token}") == 1

    described = await world.client.get("/register/verify", params={"token": token})
    assert described.json()["state"] == "valid"  # looking at a link uses nothing up
    verified = await world.client.post("/register/verify", json={"token": token})
    assert verified.status_code == 201 and verified.headers["cache-control"] == "no-store"
    body = verified.json()
    trial_end = datetime.fromisoformat(body["tenant"]["trial_ends_at"].replace("Z", "+00:00"))
    expected = datetime.fromtimestamp(world.clock.now(), UTC) + timedelta(days=14)
    assert abs((trial_end - expected).total_seconds()) < 2
    assert body["tenant"]["name"] == "Acme" and body["tenant"]["plan_id"] == "starter"
    keys = await world.client.get("/admin/api-keys", headers=bearer(body["access_token"]))
    assert keys.status_code == 200 and keys.json()["data"] == []
    login = await world.client.post(
        "/admin/auth/login", json={"email": "ann@acme.example", "password": PASSWORD}
    )
    assert login.status_code == 200


async def test_a_link_works_once(world: World) -> None:
    await world.register("bo@acme.example", "Acme")
    token = (await world.mails())[-1].token()
    assert (await world.client.post("/register/verify", json={"token": token})).status_code == 201
    again = await world.client.post("/register/verify", json={"token": token})
    assert again.status_code == 400 and again.json()["error"]["code"] == "LINK_USED"
    assert "sign in" in again.json()["error"]["message"].lower()
    assert (await world.client.get("/register/verify", params={"token": token})).json()["state"] == "used"


async def test_an_expired_link_is_refused_and_creates_nothing(world: World) -> None:
    await world.register("cy@acme.example", "Acme")
    token = (await world.mails())[-1].token()
    world.clock.advance(world.settings.registration_link_ttl_seconds + 1)
    expired = await world.client.post("/register/verify", json={"token": token})
    assert expired.status_code == 400 and expired.json()["error"]["code"] == "LINK_EXPIRED"
    assert "register again" in expired.json()["error"]["message"].lower()
    async with world.app.state.services.db.session() as session:
        assert (
            await session.scalar(
                select(func.count()).select_from(User).where(User.email == "cy@acme.example")
            )
            == 0
        )


async def test_an_unknown_token_is_a_clear_error(world: World) -> None:
    for token in ("nope", "x" * 43):
        answer = await world.client.post("/register/verify", json={"token": token})
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "LINK_INVALID"


async def test_a_known_email_gets_the_same_answer_and_a_different_mail(world: World) -> None:
    first = await world.register("dee@acme.example", "Acme")
    await world.client.post("/register/verify", json={"token": (await world.mails())[-1].token()})
    known = await world.register("dee@acme.example", "Another")
    unknown = await world.register("eve@acme.example", "Another")
    assert known.status_code == unknown.status_code == first.status_code == 202
    assert known.json() == {
        key: value.replace("eve@", "dee@") if isinstance(value, str) else value
        for key, value in unknown.json().items()
    }
    mail = (await world.mails("dee@acme.example"))[-1]
    assert mail.kind == "already_registered" and "token=" not in mail.text
    assert "/app/password/forgot" in mail.text


async def test_registration_is_limited_per_email_and_per_ip(world: World) -> None:
    per_email = world.settings.register_limit_per_email
    for _ in range(per_email):
        assert (await world.register("fay@acme.example", "Acme")).status_code == 202
    refused = await world.register("fay@acme.example", "Acme")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert (await world.register("FAY@acme.example", "Acme")).status_code == 429  # case does not help
    for i in range(world.settings.register_limit_per_ip - per_email - 2):  # refused tries count too
        assert (await world.register(f"u{i}@acme.example", "Acme")).status_code == 202
    assert (await world.register("new@acme.example", "Acme")).status_code == 429
    world.clock.advance(3601)
    assert (await world.register("new@acme.example", "Acme")).status_code == 202


async def test_a_taken_name_can_be_changed_when_following_the_link(world: World) -> None:
    await world.registered_admin("gil@first.example", "Globex")
    await world.register("hal@second.example", "Globex")  # pending registrations hold no name
    token = (await world.mails("hal@second.example"))[-1].token()
    taken = await world.client.post("/register/verify", json={"token": token})
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "ORGANISATION_TAKEN"
    renamed = await world.client.post("/register/verify", json={"token": token, "organisation": "Globex Two"})
    assert renamed.status_code == 201 and renamed.json()["tenant"]["name"] == "Globex Two"


async def test_bad_registrations_get_clear_errors(world: World) -> None:
    cases = [
        ({"plan": "platinum"}, "plan"),
        ({"password": None}, "body"),
        ({"password": "short-pass1"}, "password"),  # 11 characters
        ({"email": "not-an-email"}, "email"),
        ({"method": "passkey"}, "body"),  # a passkey registration takes no password
        ({"role": "platform:admin"}, "role"),  # mass assignment is refused
    ]
    base = {"email": "ivy@acme.example", "organisation": "Acme", "plan": "starter", "password": PASSWORD}
    for change, param in cases:
        answer = await world.client.post("/register", json={**base, **change})
        assert answer.status_code == 400, (change, answer.text)
        assert param in answer.json()["error"].get("param", "") or param == "body", (change, answer.json())
    short = await world.client.post("/register", json={**base, "password": "short-pass1"})
    assert short.json()["error"]["code"] == "PASSWORD_TOO_SHORT"
    async with world.app.state.services.db.session() as session:
        assert (
            await session.scalar(select(func.count()).select_from(Tenant).where(Tenant.name == "Acme")) == 0
        )


async def test_organisation_names_are_one_line_without_web_addresses(world: World) -> None:
    for i, (name, ok) in enumerate(
        (
            ("Acme\nClick here to claim your prize", True),  # folded onto one line
            ("Visit https://evil.example now", False),
            ("www.evil.example", False),
            ("Acme\u202eevil", False),  # an invisible direction override
            ("Booking.com Ltd", True),
        )
    ):
        answer = await world.register(f"n{i}@acme.example", name)
        assert (answer.status_code == 202) is ok, (name, answer.text)
        if not ok:
            assert answer.json()["error"]["param"] == "organisation"
    mail = (await world.mails("n0@acme.example"))[-1]
    assert "Acme Click here to claim your prize" in mail.text
