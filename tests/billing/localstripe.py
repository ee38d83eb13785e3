"""A real localstripe (a Stripe-compatible server) on a free loopback port, and Stripe's webhook signing.

    with LocalStripe() as stripe_server:           # or .start() / .stop()
        settings = Settings(..., billing_provider="stripe", stripe_api_base=stripe_server.url,
                            stripe_api_key=stripe_server.api_key, stripe_webhook_secret=SECRET)
        stripe_server.register_webhook(f"{live.url}/billing_provider/webhooks", SECRET)
        ...
        response = await post_event(client, "/billing_provider/webhooks", event("invoice.paid", {...}), SECRET)

localstripe's own command binds every interface (``::``) and keeps its store in one shared
``/tmp/localstripe.pickle``; the launcher below serves the same aiohttp application on 127.0.0.1 only,
with nothing written to disk, so parallel test runs never share state. localstripe waits 1 s before
sending each webhook (so the API answer arrives first); ``webhook_delay`` shortens that wait.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import subprocess
import sys
import time
from typing import Any

import httpx

from tests.conftest import free_port

LAUNCHER = """
import asyncio, sys, types
from aiohttp import web
from localstripe import resources, server, webhooks

resources.Store.dump_to_disk = lambda self: None  # no shared pickle in /tmp
delay = float(sys.argv[2])
webhooks.asyncio = types.SimpleNamespace(
    sleep=lambda seconds: asyncio.sleep(min(seconds, delay)), ensure_future=asyncio.ensure_future
)
web.run_app(server.app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


class LocalStripe:
    """One localstripe process; ``url`` is its API base, ``api_key`` any ``sk_test_`` key it accepts."""

    api_key = "sk_test_agentgate_localstripe"

    def __init__(self, *, webhook_delay: float = 0.05) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.webhook_delay = webhook_delay
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> LocalStripe:
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(self.port), str(self.webhook_delay)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                if self.get("/v1/customers").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                error = self.process.stderr.read().decode() if self.process.stderr else ""
                self.stop()
                raise RuntimeError(f"localstripe did not start: {error[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> LocalStripe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def get(self, path: str, **params: Any) -> httpx.Response:
        """A read straight from the server (what exists there), authenticated with ``api_key``."""
        return httpx.get(f"{self.url}{path}", params=params, auth=(self.api_key, ""), timeout=10)

    def register_webhook(self, url: str, secret: str, events: list[str] | None = None) -> None:
        """Where localstripe sends its signed events (one endpoint per server; a new call replaces it)."""
        body: dict[str, Any] = {"url": url, "secret": secret}
        if events is not None:
            body["events"] = events
        httpx.post(f"{self.url}/_config/webhooks/agentgate", json=body, timeout=10).raise_for_status()

    def flush(self) -> None:
        """Forget every object (customers, plans, subscriptions...)."""
        httpx.delete(f"{self.url}/_config/data", timeout=10).raise_for_status()


def webhook_secret() -> str:
    return "whsec_" + secrets.token_hex(16)


def sign(payload: bytes, secret: str, timestamp: int) -> str:
    """The ``Stripe-Signature`` header value: ``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<payload>")>``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def event(
    type_: str, obj: dict[str, Any], *, created: int | None = None, id_: str | None = None
) -> dict[str, Any]:
    """A provider event in Stripe's shape: ``{id, object, type, created, data: {object}}``."""
    return {
        "id": id_ or f"evt_test_{secrets.token_hex(8)}",
        "object": "event",
        "type": type_,
        "created": int(time.time()) if created is None else created,
        "livemode": False,
        "data": {"object": obj},
    }


async def post_event(
    client: httpx.AsyncClient,
    path: str,
    body: dict[str, Any] | bytes,
    secret: str,
    *,
    timestamp: int | None = None,
    signature: str | None = None,
) -> httpx.Response:
    """POST an event to a webhooks route signed as Stripe signs it (``signature`` overrides the header)."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    header = signature or sign(payload, secret, int(time.time()) if timestamp is None else timestamp)
    return await client.post(
        path,
        content=payload,
        headers={"Content-Type": "application/json", "Stripe-Signature": header},
    )
