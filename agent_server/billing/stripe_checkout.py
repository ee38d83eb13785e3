"""Checkouts with the Stripe adapter: hosted Checkout Sessions on Stripe itself; on a Stripe-compatible
server (localstripe) a SetupIntent (plans) or a PaymentIntent (one-off) that the payer confirms with
the provider's card form on their own page, named by ``client_secret`` (docs/billing.md, "Stripe").
"""

from __future__ import annotations

import uuid
from typing import Any

import stripe

from agent_server.billing.port import HostedSession, Price
from agent_server.billing.stripe_calls import call, idempotency
from agent_server.billing.stripe_hosted import hosted_checkout
from agent_server.billing.urls import SESSION_PLACEHOLDER
from agent_server.foundation.clock import Clock

INTENT_SECONDS = 86_400  # how long a SetupIntent or PaymentIntent flow is offered


def _result(
    status: str, mode: str, paid: bool, subscription: Any, customer: Any, **ids: Any
) -> dict[str, Any]:
    def plain(value: Any) -> str | None:
        return value.get("id") if isinstance(value, dict) else value

    return {
        "status": status,
        "mode": mode,
        "payment_status": "paid" if paid else "unpaid",
        "subscription": plain(subscription),
        "customer": plain(customer),
        "reference": ids.get("reference"),
        "plan_id": ids.get("plan_id"),
    }


class StripeCheckouts:
    def __init__(self, client: stripe.StripeClient, clock: Clock, *, compatible: bool) -> None:
        self.client, self.clock, self.compatible = client, clock, compatible

    async def tenant_of(self, customer_id: str | None) -> dict[str, str]:
        if not customer_id:
            return {}
        customer = await call(self.client.v1.customers.retrieve_async(customer_id))
        tenant = (customer.get("metadata") or {}).get("tenant_id")
        return {"tenant_id": tenant} if tenant else {}

    async def plan(
        self,
        customer_id: str,
        price_id: str,
        plan_id: str,
        success: str,
        cancel: str,
        trial_end: int | None = None,
    ) -> HostedSession:
        """With ``trial_end`` the subscription is first charged then (``trial_end`` of the Checkout
        Session's ``subscription_data``, or of the subscription the SetupIntent flow creates)."""
        metadata = {"plan_id": plan_id, "price_id": price_id, **await self.tenant_of(customer_id)}
        if not self.compatible:
            subscription_data: dict[str, Any] = {"metadata": metadata}
            if trial_end is not None:
                subscription_data["trial_end"] = trial_end
            params = {
                "mode": "subscription",
                "customer": customer_id,
                "line_items": [{"price": price_id, "quantity": 1}],
                "success_url": success,
                "cancel_url": cancel,
                "metadata": metadata,
                "subscription_data": subscription_data,
            }
            return await call(hosted_checkout(self.client, params, int(self.clock.now())))
        if trial_end is not None:
            metadata["trial_end"] = str(trial_end)  # metadata values are text
        params = {"customer": customer_id, "usage": "off_session", "metadata": metadata}
        intent = await call(
            self.client.v1.setup_intents.create_async(params, {"idempotency_key": str(uuid.uuid4())})
        )
        url = success.replace(SESSION_PLACEHOLDER, intent["id"])
        return HostedSession(intent["id"], url, INTENT_SECONDS, "setup_intent", intent["client_secret"])

    async def one_off(
        self,
        customer_id: str | None,
        email: str,
        lines: list[tuple[Price, int]],
        reference: str,
        success: str,
        cancel: str,
    ) -> HostedSession:
        metadata = {"reference": reference, **await self.tenant_of(customer_id)}
        currency = lines[0][0].currency.lower()
        if not self.compatible:
            items = [
                {
                    "price_data": {
                        "currency": currency,
                        "unit_amount": p.amount_minor,
                        "product_data": {"name": p.product_name},
                    },
                    "quantity": n,
                }
                for p, n in lines
            ]
            params: dict[str, Any] = {
                "mode": "payment",
                "line_items": items,
                "client_reference_id": reference,
                "success_url": success,
                "cancel_url": cancel,
                "metadata": metadata,
                "payment_intent_data": {"metadata": metadata},
                **({"customer": customer_id} if customer_id else {"customer_email": email}),
            }
            return await call(hosted_checkout(self.client, params, int(self.clock.now())))
        params = {
            "amount": sum(p.amount_minor * n for p, n in lines),
            "currency": currency,
            "metadata": metadata,
        }
        if customer_id:
            params["customer"] = customer_id
        intent = await call(self.client.v1.payment_intents.create_async(params, idempotency("pi", reference)))
        url = success.replace(SESSION_PLACEHOLDER, intent["id"])
        return HostedSession(intent["id"], url, INTENT_SECONDS, "payment_intent", intent["client_secret"])

    async def result(self, ref: str) -> dict[str, Any]:
        if ref.startswith("seti_"):
            return await self._finish_setup(ref)
        if ref.startswith("pi_"):
            intent = await call(self.client.v1.payment_intents.retrieve_async(ref))
            status = {"succeeded": "complete", "canceled": "expired"}.get(intent["status"], "open")
            reference = (intent.get("metadata") or {}).get("reference")
            return _result(
                status,
                "payment",
                intent["status"] == "succeeded",
                None,
                intent.get("customer"),
                reference=reference,
            )
        session = await call(self.client.v1.checkout.sessions.retrieve_async(ref))
        metadata = session.get("metadata") or {}
        return _result(
            session["status"],
            session["mode"],
            session.get("payment_status") == "paid",
            session.get("subscription"),
            session.get("customer"),
            reference=session.get("client_reference_id"),
            plan_id=metadata.get("plan_id"),
        )

    async def _finish_setup(self, ref: str) -> dict[str, Any]:
        """The payer confirmed the SetupIntent: its card becomes the default and the subscription is
        created, once (the subscription's id is kept in the intent's metadata; the create's
        idempotency key covers two exchanges at the same moment on Stripe itself)."""
        intent = await call(self.client.v1.setup_intents.retrieve_async(ref))
        metadata = dict(intent.get("metadata") or {})
        plan_id, customer = metadata.get("plan_id"), intent.get("customer")
        if intent["status"] != "succeeded":
            status = "expired" if intent["status"] == "canceled" else "open"
            return _result(status, "subscription", False, None, customer, plan_id=plan_id)
        if not metadata.get("subscription"):
            method = intent["payment_method"]
            await call(self.client.v1.payment_methods.attach_async(method, {"customer": customer}))
            default = {"invoice_settings": {"default_payment_method": method}}
            await call(self.client.v1.customers.update_async(customer, default))
            params: dict[str, Any] = {
                "customer": customer,
                "items": [{"plan": metadata["price_id"]}],
                "metadata": {k: v for k, v in metadata.items() if k in ("tenant_id", "plan_id")},
            }
            trial_end = int(metadata.get("trial_end") or 0)
            if trial_end > self.clock.now():  # the rest of the tenant's trial: charged at its end
                params["trial_end"] = trial_end
            subscription = await call(
                self.client.v1.subscriptions.create_async(params, idempotency("subscription", ref))
            )
            metadata["subscription"] = subscription["id"]
            await call(self.client.v1.setup_intents.update_async(ref, {"metadata": metadata}))
        return _result("complete", "subscription", True, metadata["subscription"], customer, plan_id=plan_id)
