"""Checkout sessions and their state machine (ACP 2026-04-17, docs/agentic-commerce.md):

    create ──> not_ready_for_payment ──(e-mail; address for hardware)──> ready_for_payment
    ready_for_payment ──complete──> complete_in_progress ──> completed (+ order)
                                           ├──(declined)──> ready_for_payment
                                           └──(3-D Secure needed)──> authentication_required
    authentication_required ──complete with authentication_result──> completed | ready_for_payment
    any open state ──cancel──> canceled;  any open state ──(24 h)──> expired

Bodies arrive already validated against the spec's JSON Schema (protocol.py). One completion runs at
a time: the move to ``complete_in_progress`` is a conditional UPDATE, so concurrent completes charge
once; the order is unique per session. A charge is named ``<session>:<attempt>`` at the provider, so
a retried attempt is the same charge and a completion cut short can be finished from it."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from agent_server.commerce.fulfillment import buyer_email, check_selection, missing, with_bookings
from agent_server.commerce.offer import Offer
from agent_server.commerce.orders import Orders
from agent_server.commerce.payment_types import DelegatedPayments
from agent_server.commerce.tables import CheckoutSessionRecord
from agent_server.commerce.view import OPEN, session_view
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import (
    Conflict,
    MethodNotAllowed,
    NotFound,
    PaymentRequired,
    ValidationFailed,
)
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database

SESSION_SECONDS = 86_400
STALE_COMPLETION = 120  # seconds: longer than any provider call (timeouts and retries) takes
AUTHENTICATED = ("authenticated", "attempt_acknowledged", "informational")
CART_FIELDS = ("buyer", "fulfillment_details", "locale", "timezone", "metadata")


class CheckoutSessions:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        offer: Callable[[], Offer],
        payments: DelegatedPayments,
        orders: Orders,
        links: list[dict[str, Any]],
    ) -> None:
        self.db, self.clock, self.offer, self.payments = db, clock, offer, payments
        self.orders, self.links = orders, links

    def _view(self, record: CheckoutSessionRecord, order: dict[str, Any] | None = None) -> dict[str, Any]:
        return session_view(
            record, self.offer(), self.payments.handlers(), self.links, order, now=utc(self.clock.now())
        )

    async def create(self, platform_id: str, body: dict[str, Any]) -> dict[str, Any]:
        currency = body["currency"].lower()
        cart: dict[str, Any] = {"items": self.offer().cart_items(body["line_items"], currency)}
        cart.update({field: body[field] for field in CART_FIELDS if field in body})
        lines = self._check_selection(body, cart)
        now = utc(self.clock.now())
        record = CheckoutSessionRecord(
            id=f"cs_{secrets.token_hex(12)}",
            platform_id=platform_id,
            status=self._open_status(cart, lines),
            currency=currency,
            cart=cart,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=SESSION_SECONDS),
        )
        async with self.db.session() as session:
            session.add(record)
        return self._view(record)

    async def get(self, platform_id: str, session_id: str) -> dict[str, Any]:
        record = await self._load(platform_id, session_id)
        order = await self.orders.view_of(record.order_id) if record.order_id else None
        return self._view(record, order)

    async def update(self, platform_id: str, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        record = await self._load(platform_id, session_id)
        _require_open(record, "updated")
        cart = dict(record.cart)
        if "line_items" in body:
            cart["items"] = self.offer().cart_items(body["line_items"], record.currency)
            if not cart["items"]:
                raise ValidationFailed("A session needs at least one item.", param="$.line_items")
            kept = {entry["id"] for entry in cart["items"]}  # an item taken out loses its booking
            cart["bookings"] = {k: v for k, v in (cart.get("bookings") or {}).items() if k in kept}
        cart.update({field: body[field] for field in CART_FIELDS if field in body})
        lines = self._check_selection(body, cart)
        cart.pop("declined", None)  # a changed cart is a fresh attempt
        return self._view(await self._move(record, self._open_status(cart, lines), cart))

    async def cancel(self, platform_id: str, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        record = await self._load(platform_id, session_id)
        if record.status not in OPEN:
            raise MethodNotAllowed(
                f"This checkout session is {record.status} and cannot be canceled.",
                code=f"checkout_session_{record.status}",
            )
        cart = {**record.cart, **({"intent_trace": body["intent_trace"]} if "intent_trace" in body else {})}
        return self._view(await self._move(record, "canceled", cart))

    async def complete(self, platform_id: str, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        record = await self._load(platform_id, session_id)
        _require_open(record, "completed")
        cart = {**record.cart, **({"buyer": body["buyer"]} if "buyer" in body else {})}
        result = body.get("authentication_result")
        if record.status == "authentication_required" and result is None:
            raise ValidationFailed(
                "This checkout session requires issuer authentication. The request must include "
                "'authentication_result' as provided by the issuer authentication flow.",
                code="requires_3ds",
                param="$.authentication_result",
            )
        lines = self.offer().lines(cart)
        for code, param, text in self._missing(cart, lines):
            raise ValidationFailed(text, code=code, param=param)
        email = buyer_email(cart) or ""
        token = self._token(body["payment_data"])
        cart["attempts"] = cart.get("attempts", 0) + 1
        claimed = await self._move(record, "complete_in_progress", cart, expect=record.status)
        outcome = "declined"
        ref = ""
        if result is None or result.get("outcome") in AUTHENTICATED:
            try:
                charge = await self.payments.charge(
                    token,
                    self.offer().amount(lines),
                    record.currency,
                    f"{record.id}:{cart['attempts']}",
                    result,
                )
            except BaseException:
                await self._move(claimed, record.status, record.cart, expect="complete_in_progress")
                raise
            outcome, ref = charge.outcome, charge.ref
        if outcome == "succeeded":
            return await self._complete(claimed, email, lines, ref)
        if outcome == "authentication_required":
            await self._move(claimed, "authentication_required", {**cart, "declined": False})
            raise ValidationFailed(
                "The card issuer requires authentication (3-D Secure): authenticate with the session's "
                "authentication_metadata and complete again with 'authentication_result'.",
                code="requires_3ds",
                param="$.authentication_result",
            )
        await self._move(claimed, "ready_for_payment", {**cart, "declined": True})
        raise PaymentRequired(
            "Your payment was declined. Please try a different payment method.", code="payment_declined"
        )

    async def _complete(
        self, record: CheckoutSessionRecord, email: str, lines: list[dict[str, Any]], ref: str
    ) -> dict[str, Any]:
        lines = with_bookings(lines, record.cart, self.offer().booking_days)
        order = await self.orders.create(record, email, lines, self.payments.provider, ref)
        return self._view(record, await self.orders.view_of(order.id))  # record now says completed

    def _token(self, payment_data: dict[str, Any]) -> str:
        if "instrument" not in payment_data:
            raise ValidationFailed(
                "Purchase orders are not accepted; pay with a delegated payment token.",
                code="unsupported_payment_method",
                param="$.payment_data",
            )
        known = {handler["id"] for handler in self.payments.handlers()}
        if known and payment_data.get("handler_id") not in known:
            raise ValidationFailed(
                f"Unknown payment handler; use one of: {', '.join(sorted(known))}.",
                code="invalid_handler",
                param="$.payment_data.handler_id",
            )
        return payment_data["instrument"]["credential"]["token"]

    def _check_selection(self, body: dict[str, Any], cart: dict[str, Any]) -> list[dict[str, Any]]:
        """The cart's lines, after checking the selected fulfillment options against them; the
        bookings the selection makes go into the cart."""
        offer = self.offer()
        lines = offer.lines(cart)
        made = check_selection(body.get("selected_fulfillment_options") or [], lines, offer.booking_days)
        if made:
            cart["bookings"] = {**(cart.get("bookings") or {}), **made}
        return lines

    def _missing(self, cart: dict[str, Any], lines: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return missing(cart, lines, self.offer().booking_days, utc(self.clock.now()))

    def _open_status(self, cart: dict[str, Any], lines: list[dict[str, Any]]) -> str:
        return "not_ready_for_payment" if self._missing(cart, lines) else "ready_for_payment"

    async def _load(self, platform_id: str, session_id: str) -> CheckoutSessionRecord:
        async with self.db.session() as session:
            record = await session.get(CheckoutSessionRecord, session_id)
        if record is None or record.platform_id != platform_id:
            raise NotFound("Checkout session not found.", code="session_not_found", param="id")
        if record.status in OPEN and self.clock.now() >= _aware(record.expires_at).timestamp():
            try:
                record = await self._move(record, "expired", record.cart, expect=record.status)
            except Conflict:
                return await self._load(platform_id, session_id)
        if record.status == "ready_for_payment" and self._missing(
            record.cart, self.offer().lines(record.cart)
        ):
            try:  # a booking that has come too close: not payable again until another is chosen
                record = await self._move(record, "not_ready_for_payment", record.cart, expect=record.status)
            except Conflict:
                return await self._load(platform_id, session_id)
        stale = self.clock.now() - _aware(record.updated_at).timestamp() > STALE_COMPLETION
        if record.status == "complete_in_progress" and stale:
            record = await self._recover(record)
        return record

    async def _recover(self, record: CheckoutSessionRecord) -> CheckoutSessionRecord:
        """A completion whose process died: its attempt's charge (found by its reference at the
        provider) finishes the order; without one the session is payable again."""
        cart = record.cart
        charge = await self.payments.find(f"{record.id}:{cart.get('attempts', 0)}")
        if charge is not None and charge.outcome == "succeeded":
            lines = with_bookings(self.offer().lines(cart), cart, self.offer().booking_days)
            try:
                await self.orders.create(
                    record, buyer_email(cart) or "", lines, self.payments.provider, charge.ref
                )
            except IntegrityError:  # another request recovered it first: its order stands
                return await self._load(record.platform_id, record.id)
            return record
        try:
            return await self._move(
                record, self._open_status(cart, self.offer().lines(cart)), cart, expect=record.status
            )
        except Conflict:  # another request recovered it first
            return record

    async def _move(
        self,
        record: CheckoutSessionRecord,
        status: str,
        cart: dict[str, Any],
        *,
        expect: str | None = None,
    ) -> CheckoutSessionRecord:
        """Set status and cart if the session is still in ``expect`` (its status as read)."""
        expect = expect or record.status
        now = utc(self.clock.now())
        async with self.db.session() as session:
            result = await session.execute(
                update(CheckoutSessionRecord)
                .where(
                    col(CheckoutSessionRecord.id) == record.id, col(CheckoutSessionRecord.status) == expect
                )
                .values(status=status, cart=cart, updated_at=now)
            )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise Conflict(
                "Another request changed this checkout session at the same time; retry.",
                code="checkout_session_busy",
                retry_after=1,
            )
        return record.model_copy(update={"status": status, "cart": cart, "updated_at": now})


def _aware(moment: datetime) -> datetime:
    """SQLite gives times back naive; they are UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _require_open(record: CheckoutSessionRecord, verb: str) -> None:
    if record.status not in OPEN:
        raise Conflict(
            f"This checkout session is {record.status} and cannot be {verb}.",
            code=f"checkout_session_{record.status}",
            retry_after=1 if record.status == "complete_in_progress" else None,
        )
