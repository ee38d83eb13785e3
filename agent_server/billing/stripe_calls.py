"""The Stripe SDK client as the adapter uses it: async calls whose answers are plain dicts and whose
errors are ours (never the key, never a traceback), and deterministic idempotency keys."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable
from typing import Any

import stripe

from agent_server.foundation.errors import NotFound, PaymentRequired, UpstreamFailed


def idempotency(*parts: object) -> dict[str, str]:
    """Request options with a key derived from the request: the same create twice is one create."""
    key = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:40]
    return {"idempotency_key": key}


def object_id(lookup_key: str) -> str:
    """Our id for a provider object named by a lookup key (``plan:starter:month`` -> ``ag_plan_starter_month``)."""
    return "ag_" + re.sub(r"[^A-Za-z0-9_-]", "_", lookup_key)


def make_client(api_key: str, api_base: str | None) -> stripe.StripeClient:
    return stripe.StripeClient(
        api_key,
        base_addresses={"api": api_base} if api_base else None,
        http_client=stripe.HTTPXClient(timeout=20),
        max_network_retries=2,  # safe: every create carries an idempotency key
    )


async def call(request: Awaitable[Any]) -> Any:
    """One provider call; a provider object comes back as a dict."""
    try:
        answer = await request
    except stripe.CardError as err:
        raise PaymentRequired(err.user_message or "The card was declined.", code="card_declined") from None
    except stripe.InvalidRequestError as err:
        if err.http_status == 404:
            raise NotFound(f"The payment provider has no such object: {err.user_message}") from None
        raise UpstreamFailed(f"The payment provider refused the request: {err.user_message}") from None
    except stripe.StripeError as err:
        raise UpstreamFailed(
            f"The payment provider failed: {err.user_message or type(err).__name__}"
        ) from None
    return answer.to_dict() if hasattr(answer, "to_dict") else answer


async def exists(request: Awaitable[Any]) -> bool:
    try:
        await call(request)
    except NotFound:
        return False
    return True
