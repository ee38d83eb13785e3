"""Events of the sandbox provider: Stripe's shape, signed as Stripe signs, posted to our own webhooks route.

The secret is generated once into the data dir (``billing_sandbox_webhook_secret``), so every
process of a host signs and checks alike. Delivery goes through the app itself (``deliver``, set by
``create_app``: an in-process HTTP call to ``POST /<segment>/webhooks``), so sandbox events take the
same path, signature check included, as the real provider's. A delivery that fails is logged and
the event stays stored, undelivered.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_server.billing.sandbox.store import SandboxStore, new_id
from agent_server.billing.signing import sign
from agent_server.foundation.secret_files import load_or_create

log = logging.getLogger("agentgate.billing")
SECRET_FILE = "billing_sandbox_webhook_secret"
API_VERSION = "2026-10-28.sandbox"
Deliver = Callable[[bytes, str], Awaitable[bool]]  # (raw body, Stripe-Signature) -> delivered


def sandbox_secret(data_dir: Path) -> str:
    return load_or_create(data_dir, SECRET_FILE, lambda: f"whsec_{secrets.token_hex(24)}".encode()).decode()


async def not_connected(payload: bytes, signature: str) -> bool:
    log.warning("sandbox billing event not delivered: no webhooks route is connected")
    return False


class SandboxEvents:
    def __init__(self, store: SandboxStore, secret: str) -> None:
        self.store, self.secret = store, secret
        self.deliver: Deliver = not_connected

    async def emit(
        self, type_: str, obj: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Store, sign and deliver one event about ``obj`` (a snapshot of it as it is now)."""
        data: dict[str, Any] = {"object": obj}
        if previous:
            data["previous_attributes"] = previous
        body = {
            "id": new_id("event"),
            "type": type_,
            "api_version": API_VERSION,
            "data": data,
            "delivered": False,
        }
        event, _ = await self.store.add("event", body, owner=obj.get("customer"))
        event.pop("delivered")
        payload = json.dumps(event, separators=(",", ":")).encode()
        delivered = await self.deliver(payload, sign(payload, self.secret, event["created"]))
        if delivered:
            await self.store.save({**event, "delivered": True})
        else:
            log.warning("sandbox billing event %s (%s) not delivered", event["id"], type_)
        return event
