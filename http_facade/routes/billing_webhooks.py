"""``POST /{segment}/webhooks``: the payment provider's signed events (agent_server/billing/events.py).

Authenticated by the provider's signature alone (``Stripe-Signature``, checked against the
webhook secret with a tolerance window); no JWT or API key. A bad signature or an old timestamp is
400 and changes nothing; a replayed event id is 200 ``already_applied`` and changes nothing.
Paths are relative: the billing routers are included under ``/{settings.billing_path_segment}``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from agent_server.billing.engine import ENGINE_KEY, BillingEngine

router = APIRouter(tags=["billing"])
SIGNATURE = "Stripe-Signature"

_EVENT_BODY = {
    "requestBody": {
        "required": True,
        "description": "The provider's event, exactly as sent (the signature covers these bytes).",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["id", "type", "created", "data"],
                    "properties": {
                        "id": {"type": "string", "maxLength": 100},
                        "type": {"type": "string", "examples": ["invoice.created"]},
                        "created": {"type": "integer", "description": "Unix seconds"},
                        "data": {
                            "type": "object",
                            "required": ["object"],
                            "properties": {"object": {"type": "object"}},
                        },
                    },
                }
            }
        },
    },
    "parameters": [
        {
            "name": SIGNATURE,
            "in": "header",
            "required": True,
            "schema": {"type": "string"},
            "description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>' with the webhook secret>",
        }
    ],
}


class EventReceipt(BaseModel):
    received: bool = True
    id: str = Field(description="The provider's event id.")
    type: str
    outcome: str = Field(
        description="applied; stale (older than what was applied); ignored (unknown type); "
        "unmatched (no tenant); already_applied (a replay: nothing changed)."
    )


def engine_of(request: Request) -> BillingEngine:
    return request.app.state.services.extras[ENGINE_KEY]


@router.post(
    "/webhooks",
    summary="Receive the payment provider's events (signature only; each event applied once)",
    response_model=EventReceipt,
    openapi_extra=_EVENT_BODY,
)
async def receive_event(request: Request) -> EventReceipt:
    payload = await request.body()
    receipt = await engine_of(request).events.receive(payload, request.headers.get(SIGNATURE))
    return EventReceipt(**receipt)
