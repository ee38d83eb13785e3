"""Requests for the free discovery call (leads): made on the site's page or by an agent over JSON.

One service for both (``POST /api/discovery-call.json`` and the page's form): a request is checked
against the call's topics and languages, stored, and in the same transaction two mails are queued, a
confirmation to the visitor and a notice to the team (``AGENTGATE_LEADS_EMAIL``, else the content
pack's contact address). Platform administrators read them at ``/app/leads`` and
``GET /admin/platform/leads``. The visitor's free text goes to the team only: the confirmation,
which goes to any address typed in, repeats nothing a stranger could have chosen but the topic,
one of our own.
"""

from __future__ import annotations

import secrets
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, EmailStr, Field
from sqlmodel import col, select

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import iso, utc
from agent_server.knowledge.pack import ContentPack
from agent_server.knowledge.search import Knowledge
from agent_server.mail.outbox import Mail, enqueue
from agent_server.mail.service import Mailer
from agent_server.site.tables import LeadRecord
from agent_server.storage.db import Database

OTHER = "other"
PAGE_PATH = "/catalogue/discovery-call"  # the page with the form
API_PATH = "/api/discovery-call.json"  # GET describes the call and this form; POST requests it


class CallRequest(BaseModel):
    """A request for the discovery call: the fields of the page's form and of the JSON body."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="Who to talk to.")
    email: EmailStr = Field(description="Where we answer with times for the call.")
    company: str | None = Field(default=None, max_length=200)
    topic: str = Field(min_length=1, max_length=200, description="One of the call's topics, or 'other'.")
    language: str | None = Field(default=None, max_length=8, description="One of the call's languages.")
    preferred_times: str | None = Field(default=None, max_length=300, description="e.g. 'Tuesday mornings'.")
    message: str | None = Field(default=None, max_length=2000, description="What you would like to discuss.")


def form_fields(pack: ContentPack) -> list[dict[str, Any]]:
    """The request's fields as the discovery-call document describes them to agents."""
    call = pack.discovery_call
    return [
        {"name": "name", "type": "string", "required": True, "max_length": 200},
        {"name": "email", "type": "email", "required": True, "max_length": 320},
        {"name": "company", "type": "string", "required": False, "max_length": 200},
        {"name": "topic", "type": "string", "required": True, "enum": [*call.topics, OTHER]},
        {"name": "language", "type": "string", "required": False, "enum": call.languages},
        {"name": "preferred_times", "type": "string", "required": False, "max_length": 300},
        {"name": "message", "type": "string", "required": False, "max_length": 2000},
    ]


def lead_view(row: LeadRecord) -> dict[str, Any]:
    return {
        "id": row.id,
        "object": "discovery_call_request",
        "name": row.name,
        "email": row.email,
        "company": row.company,
        "topic": row.topic,
        "language": row.language,
        "preferred_times": row.preferred_times,
        "message": row.message,
        "source": row.source,
        "status": row.status,
        "created_at": iso(row.created_at),
    }


def _line(value: str | None, param: str) -> str | None:
    """One line of text without control characters (a name, a company), or None when empty."""
    text = " ".join((value or "").split())
    if any(unicodedata.category(ch)[0] == "C" for ch in text):
        raise ValidationFailed("Use letters, digits and punctuation only.", param=param)
    return text or None


class DiscoveryCalls:
    def __init__(
        self, db: Database, clock: Clock, knowledge: Knowledge, mailer: Mailer, team: str | None
    ) -> None:
        self.db, self.clock, self.knowledge, self.mailer, self._team = db, clock, knowledge, mailer, team

    @property
    def pack(self) -> ContentPack:  # the current one: a content refresh may replace it
        return self.knowledge.pack

    @property
    def team(self) -> str:
        return self._team or self.pack.company.contact.email

    async def request(self, body: CallRequest, source: str) -> LeadRecord:
        call = self.pack.discovery_call
        if body.topic not in (*call.topics, OTHER):
            raise ValidationFailed("Choose one of the topics offered, or 'other'.", param="topic")
        language = body.language or call.languages[0]
        if language not in call.languages:
            raise ValidationFailed(
                f"Choose one of the languages offered: {', '.join(call.languages)}.", param="language"
            )
        name = _line(body.name, "name")
        if name is None:
            raise ValidationFailed("Tell us who to talk to.", param="name")
        message = (body.message or "").strip() or None
        now = self.clock.now()
        row = LeadRecord(
            id=f"lead_{secrets.token_hex(12)}",
            name=name,
            email=str(body.email).lower(),
            company=_line(body.company, "company"),
            topic=body.topic,
            language=language,
            preferred_times=_line(body.preferred_times, "preferred_times"),
            message=message,
            source=source,
            status="new",
            created_at=utc(now),
        )
        async with self.db.session() as session:  # the request and both mails commit together
            session.add(row)
            enqueue(session, self.mailer.box, self._confirmation(row), now)
            enqueue(session, self.mailer.box, self._notice(row), now)
        self.mailer.wake()
        return row

    async def recent(self, limit: int = 100) -> list[LeadRecord]:
        async with self.db.session() as session:
            query = select(LeadRecord).order_by(col(LeadRecord.created_at).desc()).limit(limit)
            return list((await session.execute(query)).scalars())

    def _confirmation(self, row: LeadRecord) -> Mail:
        call, company = self.pack.discovery_call, self.pack.company
        days = ", ".join(day.capitalize() for day in call.availability.days)
        text = (
            f"Thank you for your interest in a {call.title.lower()} with {company.name}.\n\n"
            f"We received your request (reference {row.id}) about: {row.topic}.\n"
            f"We answer within one working day with times for the call ({days}, "
            f"{call.availability.hours}, {call.timezone}).\n\n"
            "To prepare, think about:\n"
            + "".join(f"  - {line}\n" for line in call.what_to_prepare)
            + "\nIf you did not ask for this call, ignore this message; we will not write again.\n"
        )
        return Mail(row.email, f"Your {call.title.lower()} request", text, kind="discovery_call_received")

    def _notice(self, row: LeadRecord) -> Mail:
        lines = [
            f"A discovery call was requested on the {'site' if row.source == 'page' else 'API'}.",
            "",
            f"Reference: {row.id}",
            f"Name: {row.name}",
            f"E-mail: {row.email}",
            f"Company: {row.company or '-'}",
            f"Topic: {row.topic}",
            f"Language: {row.language}",
            f"Preferred times: {row.preferred_times or '-'}",
            "",
            "Message:",
            row.message or "-",
        ]
        return Mail(
            self.team,
            f"Discovery call request: {row.name}",
            "\n".join(lines) + "\n",
            kind="discovery_call_lead",
        )
