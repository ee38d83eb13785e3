"""What every delegated-payment provider shares: the outcome of a charge, the protocol a provider
implements and ACP's tokenized-card handler (docs/agentic-commerce.md, "Paying"). Below the
providers, so the Stripe one (imported only in Stripe mode) and the sandbox one both read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

Outcome = Literal["succeeded", "declined", "authentication_required"]
HANDLER_ID = "card_tokenized"


@dataclass(frozen=True)
class Charge:
    outcome: Outcome
    ref: str  # the provider's object, "" when nothing was made


class DelegatedPayments(Protocol):
    provider: str

    def handlers(self) -> list[dict[str, Any]]:
        """The ACP payment handlers a session offers (capabilities.payment.handlers)."""
        ...

    async def charge(
        self, token: str, amount: int, currency: str, reference: str, authentication: dict[str, Any] | None
    ) -> Charge:
        """``authentication``: the agent's successful 3-D Secure result (``AuthenticationResult``)."""
        ...

    async def find(self, reference: str) -> Charge | None:
        """The charge an attempt made, if it made one (to recover a completion cut short)."""
        ...

    async def refund(self, charge_ref: str, amount: int, currency: str, reference: str) -> str:
        """Give ``amount`` of a charge back, once per ``reference``; the provider's refund id."""
        ...


def card_handler(psp: str, display_name: str, config: dict[str, Any]) -> dict[str, Any]:
    """ACP's tokenized-card payment handler: the agent platform delegates a card as a token."""
    return {
        "id": HANDLER_ID,
        "name": "dev.acp.tokenized.card",
        "display_name": display_name,
        "version": "2026-01-22",
        "spec": "https://acp.dev/handlers/tokenized.card",
        "requires_delegate_payment": True,
        "requires_pci_compliance": False,
        "psp": psp,
        "config_schema": "https://acp.dev/schemas/handlers/tokenized.card/config.json",
        "instrument_schemas": ["https://acp.dev/schemas/handlers/tokenized.card/instrument.json"],
        "config": config,
    }
