"""Passkey sign-in over HTTP against the real app, with a software authenticator (authenticator.py).

Every ceremony goes through the public routes: options, the authenticator's answer, verification.
The fixtures here (``pk``, ``make_pk``) serve test_passkeys_manage.py too.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from agent_server.accounts.passkeys import Passkeys
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from agent_server.gateway.tables import Tenant
from agent_server.mail.tables import OutboxMail
from http_facade.app import create_app
from tests.accounts.authenticator import SoftAuthenticator
from tests.accounts.conftest import SentMail
from tests.conftest import BASE_URL, running

PASSWORD = "violet-harbour-lantern-42"
_hashes: list[str] = []  # argon2 is slow on purpose: hash the shared password once


@dataclass
class Admin:
    user_id: str
    tenant_id: str
    email: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class PasskeyWorld:
    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock
    device: SoftAuthenticator
    origin: str = BASE_URL
    admins: list[Admin] = field(default_factory=list)

    @property
    def passkeys(self) -> Passkeys:
        return self.app.state.accounts.passkeys

    async def admin(self, *, permissions: tuple[str, ...] = ("tenant:admin",), tenant_id: str = "") -> Admin:
        """A tenant (new unless given) and a user made through the repository, signed in by password."""
        db, now = self.app.state.services.db, self.clock.now()
        if not tenant_id:
            tenant_id = (await repo.create_tenant(db, now, f"org-{uuid.uuid4().hex[:10]}", "starter")).id
        if not _hashes:
            _hashes.append(await hash_password(PASSWORD))
        email = f"admin-{uuid.uuid4().hex[:8]}@example.com"
        user = await repo.add_user(db, repo.new_user(now, tenant_id, email, _hashes[0], list(permissions)))
        return Admin(user.id, tenant_id, email, await self.login(email))

    async def login(self, email: str) -> str:
        """A fresh admin token (a sign-in now) by password."""
        login = await self.client.post("/admin/auth/login", json={"email": email, "password": PASSWORD})
        assert login.status_code == 200, login.text
        return login.json()["access_token"]

    async def mails(self, to: str | None = None) -> list[SentMail]:
        """The queued mail (no worker runs here), decrypted, as conftest.World.mails reads it."""
        box = self.app.state.accounts.box
        async with self.app.state.services.db.session() as session:
            rows = (await session.execute(select(OutboxMail).order_by(OutboxMail.created_at))).scalars().all()
        found = [SentMail(r.to_addr, r.subject, r.kind, box.decrypt(r.body_encrypted)) for r in rows]
        return [m for m in found if to is None or m.to == to]

    async def add_passkey(
        self, admin: Admin, name: str = "Laptop", device: SoftAuthenticator | None = None
    ) -> dict[str, Any]:
        options = await self.client.post("/admin/auth/passkeys/options", headers=admin.headers)
        assert options.status_code == 200, options.text
        credential = (device or self.device).create(options.json()["options"])
        created = await self.client.post(
            "/admin/auth/passkeys", json={"credential": credential, "name": name}, headers=admin.headers
        )
        assert created.status_code == 201, created.text
        return created.json()

    async def sign_in_options(self, email: str | None = None) -> dict[str, Any]:
        body = {} if email is None else {"email": email}
        answer = await self.client.post("/admin/auth/passkey/options", json=body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    async def sign_in(
        self, email: str | None = None, device: SoftAuthenticator | None = None, **lie: Any
    ) -> httpx.Response:
        started = await self.sign_in_options(email)
        credential = (device or self.device).get(started["options"], **lie)
        return await self.client.post(
            "/admin/auth/passkey", json={"state": started["state"], "credential": credential}
        )


PasskeyWorldFactory = Callable[..., AbstractAsyncContextManager[PasskeyWorld]]


@pytest.fixture
def make_pk(settings: Settings, clock: ManualClock) -> PasskeyWorldFactory:
    """``async with make_pk(**settings_changes) as pk``: an app with its own settings."""

    @asynccontextmanager
    async def make(*, origin: str = BASE_URL, **changes: Any) -> AsyncIterator[PasskeyWorld]:
        changed = Settings(**{**settings.model_dump(), "mail_worker": False, **changes})
        app = create_app(changed, clock=clock)
        transport = httpx.ASGITransport(app)
        async with running(app), httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield PasskeyWorld(app, client, clock, SoftAuthenticator(origin), origin)

    return make


@pytest.fixture
async def pk(make_pk: PasskeyWorldFactory) -> AsyncIterator[PasskeyWorld]:
    async with make_pk() as world:
        yield world


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


async def test_a_passkey_of_a_signed_in_admin_signs_in_and_its_token_administers(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)

    answer = await pk.sign_in(admin.email)

    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert body["token_type"] == "bearer" and body["expires_in"] > 0
    assert (body["user_id"], body["tenant_id"]) == (admin.user_id, admin.tenant_id)
    keys = await pk.client.get("/admin/api-keys", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert keys.status_code == 200 and keys.json()["object"] == "list"
    listed = (await pk.client.get("/admin/auth/passkeys", headers=admin.headers)).json()["data"]
    assert listed[0]["last_used_at"] == int(pk.clock.now())


async def test_discoverable_sign_in_needs_no_email_but_the_right_user_handle(pk: PasskeyWorld) -> None:
    admin = await pk.admin()
    await pk.add_passkey(admin)
    started = await pk.client.post("/admin/auth/passkey/options")  # no body at all
    assert started.status_code == 200 and started.json()["options"]["allowCredentials"] == []

    answer = await pk.sign_in()
    assert answer.status_code == 200 and answer.json()["user_id"] == admin.user_id

    other = await pk.sign_in(user_handle=b"usr_someone-else")
    assert other.status_code == 401 and "user handle" in other.json()["error"]["message"]


async def test_a_member_of_an_sso_enforced_tenant_is_refused_but_a_platform_admin_is_not(
    pk: PasskeyWorld,
) -> None:
    member = await pk.admin()
    operator = await pk.admin(permissions=("platform:admin", "tenant:admin"), tenant_id=member.tenant_id)
    operator_device = SoftAuthenticator(pk.origin)
    await pk.add_passkey(member)
    await pk.add_passkey(operator, device=operator_device)
    async with pk.app.state.services.db.session() as session:
        enforced = {"sso_enforced": True, "plan_id": "enterprise"}  # it applies on a plan with sso
        await session.execute(update(Tenant).where(Tenant.id == member.tenant_id).values(**enforced))  # type: ignore[arg-type]

    refused = await pk.sign_in(member.email)
    assert refused.status_code == 403 and error_code(refused) == "sso_required"
    assert (await pk.sign_in(operator.email, device=operator_device)).status_code == 200


async def test_sign_in_options_are_the_same_for_known_and_unknown_addresses(pk: PasskeyWorld) -> None:
    """Never a list of credentials (their ids, id lengths and transports would tell who has passkeys):
    a discoverable request for every address, so only the challenge and the state differ."""
    admin = await pk.admin()
    usb_key = SoftAuthenticator(pk.origin, backup_eligible=False, backed_up=False, transports=["usb", "nfc"])
    await pk.add_passkey(admin, "Security key", device=usb_key)
    listed = (await pk.client.get("/admin/auth/passkeys", headers=admin.headers)).json()["data"]
    assert listed[0]["transports"] == ["nfc", "usb"]  # the server knows them: they must not show below

    async def answer(body: dict[str, Any] | None) -> tuple[str, dict[str, str]]:
        response = await pk.client.post("/admin/auth/passkey/options", json=body)
        assert response.status_code == 200, response.text
        started = response.json()
        assert started.keys() == {"state", "options"}
        assert started["options"]["allowCredentials"] == []
        # The bytes of the answer with its two random values blanked out: all else must be equal.
        masked = response.text.replace(started["state"], "STATE").replace(
            started["options"]["challenge"], "CHALLENGE"
        )
        assert masked.count("STATE") == 1 and masked.count("CHALLENGE") == 1
        return masked, {k: v for k, v in response.headers.items() if k not in ("date", "x-request-id")}

    known, known_headers = await answer({"email": admin.email})
    for other in ({"email": "nobody@example.com"}, {"email": f" {admin.email.upper()} "}, {}, None):
        masked, headers = await answer(other)
        assert masked == known, other
        assert headers == known_headers, other

    signed_in = await pk.sign_in(admin.email, device=usb_key)  # the empty list still signs in
    assert signed_in.status_code == 200 and signed_in.json()["user_id"] == admin.user_id
