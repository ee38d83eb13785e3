"""Helpers of the members tests: invite by the JSON API, read the link from the queued mail, join."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from sqlalchemy import select

from agent_server.admin.tables import AuditRecord
from agent_server.mail.tables import OutboxMail
from tests.accounts.conftest import SentMail, World, bearer

MEMBER_PASSWORD = "quartz-meadow-falcon-19"


async def invite(world: World, admin: dict[str, str], email: str, role: str) -> str:
    """Invite ``email`` as ``role``; the token of the link in the mail."""
    made = await world.client.post("/admin/invitations", json={"email": email, "role": role}, headers=admin)
    assert made.status_code == 201, made.text
    mail = [m for m in await world.mails(email.lower()) if m.kind == "member_invite"][-1]
    assert "/app/invitations/accept?token=" in mail.text
    return mail.token()


async def accept(world: World, token: str, password: str = MEMBER_PASSWORD) -> dict[str, Any]:
    answer = await world.client.post("/admin/auth/invitation", json={"token": token, "password": password})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def join(world: World, admin: dict[str, str], email: str, role: str) -> dict[str, str]:
    """A new member of ``role``: invited, accepted with a password; their bearer header."""
    return bearer((await accept(world, await invite(world, admin, email, role)))["access_token"])


async def actions(world: World, tenant_id: str) -> list[tuple[str, str | None, str]]:
    """(action, target, outcome) of the tenant's audit entries, oldest first."""
    async with world.app.state.services.db.session() as session:
        rows = await session.execute(
            select(AuditRecord.action, AuditRecord.target, AuditRecord.outcome)
            .where(AuditRecord.tenant_id == tenant_id)
            .order_by(AuditRecord.id)  # type: ignore[arg-type]
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


def code(answer: Any) -> str:
    return str(answer.json()["error"]["code"])


async def invitation_token(app: FastAPI, to: str) -> str:
    """The token of the newest invitation mail queued for ``to`` (read from the outbox, decrypted)."""
    async with app.state.services.db.session() as session:
        query = select(OutboxMail).where(OutboxMail.to_addr == to, OutboxMail.kind == "member_invite")
        rows = (await session.execute(query.order_by(OutboxMail.created_at))).scalars().all()
    assert rows, f"no invitation mail for {to}"
    row = rows[-1]
    return SentMail(
        row.to_addr, row.subject, row.kind, app.state.accounts.box.decrypt(row.body_encrypted)
    ).token()
