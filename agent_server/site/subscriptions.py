"""Newsletter and waitlist subscriptions: one row per (e-mail, list), confirmed by a mailed link.

Double opt-in: a first subscription is ``pending`` and a link is mailed in the same transaction; the
link's page has a button that posts the token (``confirm``), and only then is the row ``active``. A
GET of the link changes nothing, so a mail scanner cannot subscribe anyone. Subscribing again while
pending mails a fresh link (the old one stops working), at most every ``RESEND_SECONDS``; an active
subscription stays as it is. Only the token's digest is stored, and kept after the confirmation so
the link can say it was used. Rows from before the double opt-in stay active.
"""

from __future__ import annotations

import secrets
from datetime import UTC
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from agent_server.accounts import links
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Unavailable
from agent_server.foundation.timeutil import iso, utc
from agent_server.mail.outbox import Mail, enqueue
from agent_server.mail.service import Mailer
from agent_server.site.tables import SubscriptionRecord
from agent_server.storage.db import Database

ListName = Literal["newsletter", "waitlist"]
PENDING, ACTIVE = "pending", "active"
CONFIRM_PAGE = "/newsletter/confirm"
CONFIRM_SECONDS = 7 * 86_400
RESEND_SECONDS = 600
LIST_NAMES = {"newsletter": "newsletter", "waitlist": "waitlist for new features"}


class SubscribeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr
    list: ListName = Field(default="newsletter", description="newsletter | waitlist")
    name: str | None = Field(default=None, max_length=200)


class ConfirmBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200, description="The token of the link in the mail.")


def _sent_at(sub: SubscriptionRecord) -> float:
    """When the current link was mailed (its expiry less its lifetime); 0 for rows without one."""
    if sub.confirm_expires_at is None:
        return 0.0
    expires = sub.confirm_expires_at
    return (expires if expires.tzinfo else expires.replace(tzinfo=UTC)).timestamp() - CONFIRM_SECONDS


def _state(sub: SubscriptionRecord | None, now: float) -> str:
    if sub is None or sub.confirm_expires_at is None:
        return "invalid"
    if sub.status == ACTIVE:
        return "used"
    return links.token_state(None, sub.confirm_expires_at, now)


def subscription_view(sub: SubscriptionRecord) -> dict[str, Any]:
    return {
        "subscription_id": sub.id,
        "email": sub.email,
        "list": sub.list,
        "status": sub.status,
        "created_at": iso(sub.created_at),
    }


class Subscriptions:
    def __init__(self, db: Database, clock: Clock, mailer: Mailer | None = None) -> None:
        self.db, self.clock = db, clock
        self.mailer = mailer  # set by create_app: confirmation links go out through the app's mailer

    async def _find(self, email: str, list_name: str) -> SubscriptionRecord | None:
        async with self.db.session() as session:
            rows = await session.execute(
                select(SubscriptionRecord).where(
                    col(SubscriptionRecord.email) == email, col(SubscriptionRecord.list) == list_name
                )
            )
            return rows.scalars().first()

    async def subscribe(self, body: SubscribeBody) -> tuple[SubscriptionRecord, bool]:
        """The subscription and whether this call created it; a pending one gets a link by mail."""
        mailer = self._mailer()
        email = str(body.email).lower()  # one subscriber per mailbox, whatever the spelling
        now = self.clock.now()
        existing = await self._find(email, body.list)
        if existing is not None:
            await self._resend(mailer, existing, now)
            return existing, False
        token, digest = links.new_token()
        record = SubscriptionRecord(
            id=f"sub_{secrets.token_hex(12)}",
            email=email,
            list=body.list,
            name=body.name,
            status=PENDING,
            created_at=utc(now),
            confirm_digest=digest,
            confirm_expires_at=utc(now + CONFIRM_SECONDS),
        )
        try:
            async with self.db.session() as session:  # the row and its link's mail, together
                session.add(record)
                enqueue(session, mailer.box, self._confirm_mail(mailer, record, token), now)
        except IntegrityError:  # a concurrent first subscription won the unique constraint
            winner = await self._find(email, body.list)
            if winner is None:
                raise
            return winner, False
        mailer.wake()
        return record, True

    async def _resend(self, mailer: Mailer, sub: SubscriptionRecord, now: float) -> None:
        """A fresh link for a subscription still pending, unless one went out a moment ago."""
        if sub.status != PENDING or now - _sent_at(sub) < RESEND_SECONDS:
            return
        token, digest = links.new_token()
        async with self.db.session() as session:
            changed = await session.execute(
                update(SubscriptionRecord)
                .where(col(SubscriptionRecord.id) == sub.id, col(SubscriptionRecord.status) == PENDING)
                .values(confirm_digest=digest, confirm_expires_at=utc(now + CONFIRM_SECONDS))
            )
            if changed.rowcount == 1:  # type: ignore[attr-defined]
                enqueue(session, mailer.box, self._confirm_mail(mailer, sub, token), now)
        mailer.wake()

    async def link_state(self, token: str) -> str:
        """valid, used, expired or invalid: what the link's page says before anything changes."""
        return _state(await self._by_token(token), self.clock.now())

    async def confirm(self, token: str) -> SubscriptionRecord:
        """Follow the link (once): the subscription becomes active."""
        sub, now = await self._by_token(token), self.clock.now()
        state = _state(sub, now)
        if sub is None or state != "valid":
            raise links.refuse(
                state,
                used="This link was already used: the subscription is confirmed.",
                expired="This link expired. Subscribe again to get a new one.",
            )
        async with self.db.session() as session:
            claimed = await session.execute(
                update(SubscriptionRecord)
                .where(col(SubscriptionRecord.id) == sub.id, col(SubscriptionRecord.status) == PENDING)
                .values(status=ACTIVE, confirmed_at=utc(now))
            )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]  # another click came first
            raise links.refuse(
                "used", used="This link was already used: the subscription is confirmed.", expired=""
            )
        sub.status = ACTIVE
        return sub

    async def _by_token(self, token: str) -> SubscriptionRecord | None:
        async with self.db.session() as session:
            query = select(SubscriptionRecord).where(
                col(SubscriptionRecord.confirm_digest) == links.digest(token)
            )
            return (await session.execute(query)).scalars().first()

    def _mailer(self) -> Mailer:
        if self.mailer is None:
            raise Unavailable("Subscriptions cannot mail their confirmation link here.", retry_after=60)
        return self.mailer

    @staticmethod
    def _confirm_mail(mailer: Mailer, sub: SubscriptionRecord, token: str) -> Mail:
        settings = mailer.settings
        url = links.link(settings.public_base_url, CONFIRM_PAGE, token)
        service = settings.service_name
        text = (
            f"Someone, hopefully you, asked to put {sub.email} on the {LIST_NAMES.get(sub.list, sub.list)} "
            f"of {service}. To confirm, open this link and press the button there:\n\n"
            f"  {url}\n\n"
            f"The link works once and expires in {CONFIRM_SECONDS // 86_400} days.\n"
            "If it was not you, ignore this message: without the confirmation you get nothing from us.\n"
        )
        return Mail(
            sub.email,
            f"Confirm your subscription to the {service} {sub.list}",
            text,
            kind="subscription_confirm",
        )
