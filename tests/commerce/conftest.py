"""Fixtures of the agentic commerce tests: the app on a ManualClock near real time (signatures carry
real timestamps), an agent platform and a client speaking ACP, and the spec's files (acp_spec/)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from jsonschema import Draft202012Validator, FormatChecker

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.admin.conftest import World, world  # noqa: F401  (the admin tokens of tests/admin)
from tests.conftest import BASE_URL, running

SPEC = Path(__file__).parent / "acp_spec"
VERSION = "2026-04-17"
TRAINING = "agent-engineering-fundamentals"  # 690.00 EUR per seat in the shipped content pack
PACKAGE = "eu-ai-act-readiness"  # a fixed-fee consulting package without a booking
BOOKED = "agent-architecture-review"  # a fixed-fee package booked for 3 working days
HARDWARE = "edge-inference-node"  # 8,900.00 EUR, shipped after about 4 weeks


@cache
def bundle() -> dict[str, Any]:
    return json.loads((SPEC / "json-schema" / "schema.agentic_checkout.json").read_text())


@cache
def examples() -> dict[str, Any]:
    return json.loads((SPEC / "examples" / "examples.agentic_checkout.json").read_text())


def assert_valid(name: str, body: Any) -> None:
    """``body`` is a valid ``name`` of the spec's JSON Schema bundle (formats checked too)."""
    schema = {"$ref": f"#/$defs/{name}", "$defs": bundle()["$defs"]}
    errors = sorted(Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(body), key=str)
    assert not errors, f"not a valid {name}: " + "; ".join(
        f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]
    )


@dataclass
class Shop:
    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock
    credential: str
    platform_id: str
    signing_secret: str

    def headers(self, key: str | None = None, **extra: str) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.credential}", "API-Version": VERSION, **extra}
        if key is not None:
            headers["Idempotency-Key"] = key
        return headers

    async def post(self, path: str, body: Any, key: str | None = "new", **extra: str) -> httpx.Response:
        key = str(uuid.uuid4()) if key == "new" else key
        return await self.client.post(
            "/agentic_commerce" + path, json=body, headers=self.headers(key, **extra)
        )

    async def get(self, path: str) -> httpx.Response:
        return await self.client.get("/agentic_commerce" + path, headers=self.headers())

    async def create(self, *items: str, email: str | None = "buyer@example.com") -> dict[str, Any]:
        body: dict[str, Any] = {
            "currency": "eur",
            "line_items": [{"id": item} for item in items or (TRAINING,)],
            "capabilities": {},
        }
        if email:
            body["buyer"] = {"email": email, "full_name": "Ada Buyer"}
        answer = await self.post("/checkout_sessions", body)
        assert answer.status_code == 201, answer.text
        assert_valid("CheckoutSession", answer.json())
        return answer.json()


def payment(token: str = "spt_sandbox_success") -> dict[str, Any]:
    return {
        "payment_data": {
            "handler_id": "card_tokenized",
            "instrument": {"type": "card", "credential": {"type": "spt", "token": token}},
        }
    }


@pytest.fixture
def shop_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_worker": False})


@pytest.fixture
async def shop(shop_settings: Settings) -> AsyncIterator[Shop]:
    clock = ManualClock(start=time.time())
    async with running(create_app(shop_settings, clock=clock)) as app:
        made = await app.state.commerce.platforms.create("Test assistant", None)
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield Shop(app, client, clock, made.credential, made.platform.id, made.signing_secret)
