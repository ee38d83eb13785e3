"""Accounts fixtures: an app on a ManualClock over ASGI whose mail stays in the outbox for reading.

Mail delivery over a real SMTP server is tested in test_mail*.py and in the registration journey;
these tests read what was queued (the outbox row, decrypted with the app's key) so they can check
each message exactly, and move the clock instead of waiting.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.mail.tables import OutboxMail
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

PASSWORD = "violet-harbour-lantern-42"


@dataclass(frozen=True)
class SentMail:
    to: str
    subject: str
    kind: str
    text: str

    def token(self) -> str:
        match = re.search(r"[?&]token=([A-Za-z0-9_-]+)", self.text)
        assert match, f"no link with a token in: {self.text!r}"
        return match.group(1)


@dataclass
class World:
    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock
    settings: Settings

    async def mails(self, to: str | None = None) -> list[SentMail]:
        box = self.app.state.accounts.box
        async with self.app.state.services.db.session() as session:
            rows = (await session.execute(select(OutboxMail).order_by(OutboxMail.created_at))).scalars().all()
        found = [SentMail(r.to_addr, r.subject, r.kind, box.decrypt(r.body_encrypted)) for r in rows]
        return [m for m in found if to is None or m.to == to]

    async def register(self, email: str, organisation: str, **extra: Any) -> httpx.Response:
        body = {
            "email": email,
            "organisation": organisation,
            "plan": "starter",
            "password": PASSWORD,
            **extra,
        }
        return await self.client.post("/register", json=body)

    async def registered_admin(self, email: str, organisation: str) -> dict[str, Any]:
        """Register and follow the link; the verify answer (with access_token)."""
        assert (await self.register(email, organisation)).status_code == 202
        token = (await self.mails(email))[-1].token()
        answer = await self.client.post("/register/verify", json={"token": token})
        assert answer.status_code == 201, answer.text
        return answer.json()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def accounts_settings(settings: Settings, **changes: object) -> Settings:
    return settings.model_copy(update={"mail_worker": False, "webhook_worker": False, **changes})


@pytest.fixture
async def world(settings: Settings) -> AsyncIterator[World]:
    clock = ManualClock(start=time.time())
    settings = accounts_settings(settings)
    app = create_app(settings, clock=clock)
    async with (
        running(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield World(app, client, clock, settings)
