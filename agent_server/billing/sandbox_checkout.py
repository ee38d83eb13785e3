"""The sandbox provider's checkouts: sessions shown on our own confirmation page, completed with a
sandbox test card (billing.py), each step sending the events the real provider would."""

from __future__ import annotations

from typing import Any

from agent_server.billing.port import HostedSession, Price
from agent_server.billing.sandbox.billing import CARDS, SandboxBilling
from agent_server.billing.sandbox.store import SandboxStore
from agent_server.foundation.errors import Conflict, NotFound, PaymentRequired

SESSION_SECONDS = 86_400  # like the provider's Checkout Sessions


class SandboxCheckouts:
    def __init__(self, store: SandboxStore, billing: SandboxBilling, pages_url: str) -> None:
        self.store, self.billing, self.events, self.pages_url = store, billing, billing.events, pages_url

    def now(self) -> int:
        return int(self.store.clock.now())

    async def required(self, kind: str, object_id: str) -> dict[str, Any]:
        found = await self.store.get(kind, object_id)
        if found is None:
            raise NotFound(f"No sandbox {kind.replace('_', ' ')} '{object_id}'.")
        return found

    async def _open(self, customer_id: str | None, email: str, **fields: Any) -> HostedSession:
        customer = await self.store.get("customer", customer_id) if customer_id else None
        tenant_id = (customer or {}).get("metadata", {}).get("tenant_id")
        if tenant_id:  # as our calls to the real provider do: the tenant in the session's metadata
            fields["metadata"] = {**fields["metadata"], "tenant_id": tenant_id}
        session, _ = await self.store.add(
            "checkout_session",
            {
                "customer": customer_id,
                "customer_email": email,
                "status": "open",
                "payment_status": "unpaid",
                "subscription": None,
                "payment_intent": None,
                "expires_at": self.now() + SESSION_SECONDS,
                **fields,
            },
            owner=customer_id,
        )
        url = f"{self.pages_url}/checkout/{session['id']}"
        session["url"] = url
        await self.store.save(session)
        return HostedSession(session["id"], url, SESSION_SECONDS)

    async def plan(
        self,
        customer_id: str,
        price: Price,
        stored: dict[str, Any],
        plan_id: str,
        success_url: str,
        cancel_url: str,
        trial_end: int | None = None,
    ) -> HostedSession:
        """As Stripe's Checkout: with ``trial_end`` nothing is due today and the subscription's first
        invoice is made at that moment."""
        items = [{"description": price.product_name, "quantity": 1, "amount_total": price.amount_minor}]
        return await self._open(
            customer_id,
            "",
            mode="subscription",
            price=stored,
            line_items={"object": "list", "data": items},
            amount_total=0 if trial_end else price.amount_minor,
            currency=price.currency.lower(),
            client_reference_id=None,
            success_url=success_url,
            cancel_url=cancel_url,
            metadata={"plan_id": plan_id},
            subscription_data={"trial_end": trial_end},
        )

    async def one_off(
        self,
        customer_id: str | None,
        email: str,
        lines: list[tuple[Price, int]],
        reference: str,
        success_url: str,
        cancel_url: str,
    ) -> HostedSession:
        items = [
            {"description": p.product_name, "quantity": n, "amount_total": p.amount_minor * n}
            for p, n in lines
        ]
        return await self._open(
            customer_id,
            email,
            mode="payment",
            line_items={"object": "list", "data": items},
            amount_total=sum(item["amount_total"] for item in items),
            currency=lines[0][0].currency.lower(),
            client_reference_id=reference,
            success_url=success_url,
            cancel_url=cancel_url,
            metadata={"reference": reference},
        )

    async def session(self, ref: str) -> dict[str, Any]:
        """The session as the confirmation page shows it; an open one past its time expires now."""
        session = await self.required("checkout_session", ref)
        if session["status"] == "open" and self.now() >= session["expires_at"]:
            session["status"] = "expired"
            await self.store.save(session)
            await self.events.emit("checkout.session.expired", session)
        return session

    async def result(self, ref: str) -> dict[str, Any]:
        session = await self.session(ref)
        return {
            "status": session["status"],
            "mode": session["mode"],
            "payment_status": session["payment_status"],
            "subscription": session["subscription"],
            "customer": session["customer"],
            "reference": session["client_reference_id"],
            "plan_id": session["metadata"].get("plan_id"),
        }

    async def confirm(self, ref: str, card_number: str) -> dict[str, Any]:
        """The payer pays on the confirmation page: the session completes, or the card is declined
        (``payment_intent.payment_failed``; the session stays open for another card)."""
        session = await self.session(ref)
        if session["status"] != "open":
            raise Conflict(f"This checkout is {session['status']}.", code=f"checkout_{session['status']}")
        if CARDS.get(card_number) is None:
            raise PaymentRequired("Unknown sandbox card; use one the page lists.", code="card_declined")
        intent, _ = await self.store.add(
            "payment_intent",
            {
                "customer": session["customer"],
                "amount": session["amount_total"],
                "currency": session["currency"],
                "metadata": session["metadata"],
                "status": "requires_payment_method",
            },
            owner=session["customer"],
        )
        if CARDS[card_number] == "declined":
            intent["last_payment_error"] = {"code": "card_declined", "message": "Your card was declined."}
            await self.store.save(intent)
            await self.events.emit("payment_intent.payment_failed", intent)
            return session
        if session["mode"] == "subscription":
            customer = await self.required("customer", session["customer"])
            await self.billing.attach_card(customer, card_number)
            trial_end = (session.get("subscription_data") or {}).get("trial_end")
            subscription = await self.billing.subscribe(
                customer["id"], session["price"], session["metadata"], trial_end
            )
            session["subscription"] = subscription["id"]
        intent["status"] = "succeeded"
        await self.store.save(intent)
        if session["mode"] == "payment":
            await self.events.emit("payment_intent.succeeded", intent)
        session.update(status="complete", payment_status="paid", payment_intent=intent["id"])
        await self.store.save(session)
        await self.events.emit("checkout.session.completed", session)
        return session
