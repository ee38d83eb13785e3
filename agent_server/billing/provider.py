"""The payment-provider seam and the sandbox provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CheckoutRequest:
    order_id: str
    description: str
    amount_minor: int
    currency: str
    email: str


@dataclass(frozen=True)
class CheckoutSession:
    provider_ref: str
    url: str  # where the buyer completes the payment
    expires_in: int  # seconds the URL stays valid


class PaymentProvider(Protocol):
    name: str

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutSession: ...


class SandboxProvider:
    """Charges nothing: the checkout URL is the order's own status page on the public base URL."""

    name = "sandbox"

    def __init__(self, base_url: str, expires_in: int = 86_400) -> None:
        self.base_url, self.expires_in = base_url.rstrip("/"), expires_in

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutSession:
        return CheckoutSession(
            provider_ref=f"sandbox_{request.order_id}",
            url=f"{self.base_url}/api/checkout.php?order_id={request.order_id}",
            expires_in=self.expires_in,
        )
