"""Delegated payment: the token an agent platform got for the buyer is charged at the billing
provider when a session completes (docs/agentic-commerce.md, "Paying").

The sandbox provider knows three tokens with the outcomes of its test cards, plus issuer
authentication (3-D Secure) that the people's hosted checkout does inside its own page. Each charge
is an object of the sandbox's records (a ``payment_intent``) whose lookup key names the session and
attempt, so a retried attempt finds its charge instead of making a second one.
"""

from __future__ import annotations

import secrets
from typing import Any

from agent_server.billing.port import BillingProvider
from agent_server.commerce.payment_types import Charge, DelegatedPayments, Outcome, card_handler
from agent_server.foundation.errors import Unavailable

SANDBOX_TOKENS: dict[str, Outcome] = {
    "spt_sandbox_success": "succeeded",
    "spt_sandbox_declined": "declined",
    "spt_sandbox_authentication_required": "authentication_required",
}


class SandboxPayments:
    provider = "sandbox"

    def __init__(self, store: Any) -> None:
        self.store = store  # the sandbox provider's SandboxStore

    def handlers(self) -> list[dict[str, Any]]:
        config = {"environment": "sandbox", "supports_3ds": True, "tokens": sorted(SANDBOX_TOKENS)}
        return [card_handler("sandbox", "Card (sandbox)", config)]

    async def charge(
        self, token: str, amount: int, currency: str, reference: str, authentication: dict[str, Any] | None
    ) -> Charge:
        outcome = SANDBOX_TOKENS.get(token, "declined")
        if outcome == "authentication_required":
            if authentication is None:
                return Charge("authentication_required", "")
            outcome = "succeeded"
        intent, _ = await self.store.add(
            "payment_intent",
            {
                "amount": amount,
                "currency": currency,
                "metadata": {"acp_reference": reference},
                "status": "succeeded" if outcome == "succeeded" else "requires_payment_method",
                **({"last_payment_error": {"code": "card_declined"}} if outcome == "declined" else {}),
            },
            lookup=f"acp:{reference}",
        )
        succeeded = intent["status"] == "succeeded"
        return Charge("succeeded" if succeeded else "declined", intent["id"])

    async def refund(self, charge_ref: str, amount: int, currency: str, reference: str) -> str:
        refund, _ = await self.store.add(
            "refund",
            {"id": f"re_sbx_{secrets.token_hex(12)}", "payment_intent": charge_ref, "amount": amount,
             "currency": currency, "status": "succeeded"},
            lookup=f"acp-refund:{reference}",
        )  # fmt: skip
        return refund["id"]

    async def find(self, reference: str) -> Charge | None:
        intent = await self.store.find("payment_intent", f"acp:{reference}")
        if intent is None:
            return None
        return Charge("succeeded" if intent["status"] == "succeeded" else "declined", intent["id"])


class NoDelegatedPayments:
    """A provider without a delegated-payment flow here yet: sessions offer no handler and
    completing one answers 503 rather than pretending."""

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def handlers(self) -> list[dict[str, Any]]:
        return []

    async def charge(
        self, token: str, amount: int, currency: str, reference: str, authentication: dict[str, Any] | None
    ) -> Charge:
        raise self._unavailable()

    def _unavailable(self) -> Unavailable:
        return Unavailable(
            f"Delegated payment through the '{self.provider}' provider is not available yet.",
            code="payment_provider_unavailable",
        )

    async def find(self, reference: str) -> Charge | None:
        return None

    async def refund(self, charge_ref: str, amount: int, currency: str, reference: str) -> str:
        raise self._unavailable()


def delegated_payments(provider: BillingProvider) -> DelegatedPayments:
    store = getattr(provider, "store", None)
    if provider.name == "sandbox" and store is not None:
        return SandboxPayments(store)
    if provider.name == "stripe":
        from agent_server.commerce.payment_stripe import StripePayments  # the SDK only in Stripe mode

        return StripePayments(provider.client, compatible=provider.compatible)  # type: ignore[attr-defined]
    return NoDelegatedPayments(provider.name)
