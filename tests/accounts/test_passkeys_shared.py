"""Passkeys across processes: two apps on one PostgreSQL and one Redis, as two servers would run.

A ceremony started on one server finishes on the other (the challenge is in Redis, the credential
in PostgreSQL, its key and handle as bytea), and its replay on the first finds nothing.
"""

from __future__ import annotations

import uuid

import pytest

from tests.accounts import test_passkeys as passkey_world
from tests.accounts.test_passkeys import PasskeyWorldFactory, error_code

make_pk = passkey_world.make_pk  # the fixture, shared with test_passkeys.py

pytestmark = [pytest.mark.redis, pytest.mark.postgres]


async def test_a_ceremony_started_on_one_server_finishes_once_on_another(
    make_pk: PasskeyWorldFactory, postgres_url: str, redis_url: str
) -> None:
    shared = {
        "database_url": postgres_url,
        "redis_url": redis_url,
        "kv_prefix": f"test-{uuid.uuid4().hex[:8]}:",
        "jwt_secret": "a-shared-secret-of-at-least-32-bytes-" + uuid.uuid4().hex,
    }
    async with make_pk(**shared) as first, make_pk(**shared) as second:
        admin = await first.admin()
        options = (await first.client.post("/admin/auth/passkeys/options", headers=admin.headers)).json()
        credential = first.device.create(options["options"])
        created = await second.client.post(
            "/admin/auth/passkeys", json={"credential": credential, "name": "Laptop"}, headers=admin.headers
        )
        assert created.status_code == 201, created.text

        started = (
            await second.client.post("/admin/auth/passkey/options", json={"email": admin.email})
        ).json()
        body = {"state": started["state"], "credential": first.device.get(started["options"])}
        signed_in = await first.client.post("/admin/auth/passkey", json=body)
        assert signed_in.status_code == 200 and signed_in.json()["user_id"] == admin.user_id

        replayed = await second.client.post("/admin/auth/passkey", json=body)
        assert replayed.status_code == 400 and error_code(replayed) == "passkey_ceremony_expired"
        later = await first.sign_in(admin.email)  # the counter stored by one server is checked by the other
        assert later.status_code == 200
        backwards = await second.sign_in(admin.email, device=first.device, counter=1)
        assert backwards.status_code == 401 and "sign count" in backwards.json()["error"]["message"]
