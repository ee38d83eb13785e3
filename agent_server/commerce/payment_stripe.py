"""Delegated payment through Stripe with the official SDK: the agent platform's Shared Payment Token
(``spt_…``) is charged by one confirmed PaymentIntent (``shared_payment_granted_token``). A
Stripe-compatible test server (``AGENTGATE_STRIPE_API_BASE``, e.g. localstripe) knows no such
tokens, so there the token is used as the ``payment_method`` (``pm_card_visa``) as far as it goes.

The idempotency key is derived from the session and attempt, so a retried attempt is the same
PaymentIntent at Stripe, never a second charge. ``requires_action`` means the issuer wants 3-D
Secure: the agent authenticates and completes again; its result goes to Stripe as
``payment_method_options.card.three_d_secure``."""

from __future__ import annotations

from typing import Any

import stripe

from agent_server.billing.stripe_calls import call, idempotency
from agent_server.commerce.payment_types import Charge, card_handler
from agent_server.foundation.errors import PaymentRequired

# ACP AuthenticationResult.outcome_details -> Stripe's three_d_secure fields
THREE_DS_FIELDS = {
    "three_ds_cryptogram": "cryptogram",
    "electronic_commerce_indicator": "electronic_commerce_indicator",
    "transaction_id": "transaction_id",
    "version": "version",
}


def intent_params(
    token: str,
    amount: int,
    currency: str,
    reference: str,
    authentication: dict[str, Any] | None,
    *,
    compatible: bool,
) -> dict[str, Any]:
    """The PaymentIntent create request for one charge attempt."""
    params: dict[str, Any] = {
        "amount": amount,
        "currency": currency,
        "confirm": True,
        "metadata": {"acp_reference": reference},
    }
    if compatible:
        params["payment_method"] = token
    else:
        params["shared_payment_granted_token"] = token
        params["automatic_payment_methods"] = {"enabled": True, "allow_redirects": "never"}
    details = (authentication or {}).get("outcome_details")
    if details and not compatible:
        secure = {theirs: details[ours] for ours, theirs in THREE_DS_FIELDS.items() if ours in details}
        params["payment_method_options"] = {"card": {"three_d_secure": secure}}
    return params


class StripePayments:
    provider = "stripe"

    def __init__(self, client: stripe.StripeClient, *, compatible: bool) -> None:
        self.client, self.compatible = client, compatible

    def handlers(self) -> list[dict[str, Any]]:
        environment = "test" if self.compatible else "production"
        return [card_handler("stripe", "Card", {"environment": environment, "supports_3ds": True})]

    async def charge(
        self, token: str, amount: int, currency: str, reference: str, authentication: dict[str, Any] | None
    ) -> Charge:
        params = intent_params(token, amount, currency, reference, authentication, compatible=self.compatible)
        options = idempotency("acp", reference, authentication is not None)
        try:
            intent = await call(self.client.v1.payment_intents.create_async(params, options))
        except PaymentRequired:  # the SDK's CardError: declined
            return Charge("declined", "")
        status = intent.get("status")
        if status == "succeeded":
            return Charge("succeeded", intent["id"])
        if status == "requires_action":
            return Charge("authentication_required", intent["id"])
        return Charge("declined", intent["id"])

    async def find(self, reference: str) -> Charge | None:
        """Stripe's search by the metadata every attempt carries; a compatible test server has no
        search, so its recent PaymentIntents are read instead."""
        if self.compatible:
            listed = await call(self.client.v1.payment_intents.list_async({"limit": 100}))
            found = [i for i in listed["data"] if (i.get("metadata") or {}).get("acp_reference") == reference]
        else:
            query = {"query": f"metadata['acp_reference']:'{reference}'", "limit": 1}
            found = (await call(self.client.v1.payment_intents.search_async(query)))["data"]
        if not found:
            return None
        intent = found[0]
        return Charge("succeeded" if intent.get("status") == "succeeded" else "declined", intent["id"])

    async def refund(self, charge_ref: str, amount: int, currency: str, reference: str) -> str:
        params = {"payment_intent": charge_ref, "amount": amount, "metadata": {"acp_reference": reference}}
        refund = await call(self.client.v1.refunds.create_async(params, idempotency("acp-refund", reference)))
        return refund["id"]
