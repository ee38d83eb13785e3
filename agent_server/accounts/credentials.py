"""Passwords of existing users: reset by e-mail link, invitation (a first password), change, sign-out.

Every path that sets a password goes through ``PasswordPolicy.hash_new``; every one that sets or
resets a password raises the user's token version, which ends their earlier sessions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import links, messages
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.accounts.sessions import Sessions, SignedIn
from agent_server.accounts.tables import EmailToken
from agent_server.clock import Clock
from agent_server.errors import NotFound, ValidationFailed
from agent_server.gateway import repository as repo
from agent_server.gateway.keys import new_id
from agent_server.gateway.passwords import verify_password
from agent_server.gateway.service import Gateway
from agent_server.gateway.tables import Tenant, User
from agent_server.mail.outbox import enqueue
from agent_server.mail.service import Mailer
from agent_server.ratelimit import Limiter, Policy
from agent_server.settings import Settings
from agent_server.storage.db import Database
from agent_server.timeutil import utc

RESET, INVITE = "password_reset", "invite"
HOUR = 3600


class Credentials:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        clock: Clock,
        mailer: Mailer,
        policy: PasswordPolicy,
        limiter: Limiter,
        gateway: Gateway,
        service_name: str,
    ) -> None:
        self.settings, self.db, self.clock, self.mailer = settings, db, clock, mailer
        self.policy, self.limiter, self.gateway, self.service_name = policy, limiter, gateway, service_name
        self.sessions: Sessions = gateway.sessions
        self.per_ip = Policy("reset-ip", settings.register_limit_per_ip, HOUR)
        self.per_email = Policy("reset-email", settings.register_limit_per_email, HOUR)

    # -- reset by e-mail -------------------------------------------------------------------------

    async def forgot(self, email: str, ip: str) -> dict[str, Any]:
        """Mail a reset link when the address has an account; the answer is the same either way."""
        email = email.strip().lower()
        await self.limiter.enforce(self.per_ip, ip)
        await self.limiter.enforce(self.per_email, email)
        user = await repo.find_user(self.db, email)
        if user is not None and not await self._sso_only(user):
            now, ttl = self.clock.now(), self.settings.password_reset_ttl_seconds
            async with self.db.session() as session:
                token = self.add_token(session, user.id, RESET, now, ttl)
                url = links.link(self.settings.app_base_url, links.RESET_PATH, token)
                enqueue(
                    session, self.mailer.box, messages.password_reset(email, self.service_name, url, ttl), now
                )
            self.mailer.wake()  # committed: send now rather than at the next poll
        return {
            "object": "password_reset",
            "status": "sent_if_known",
            "message": f"If {email} has an account, a reset link is on its way.",
        }

    async def _sso_only(self, user: User) -> bool:
        return "platform:admin" not in user.permissions and await self.sessions.sso_enforced(user.tenant_id)

    def add_token(self, session: AsyncSession, user_id: str, purpose: str, now: float, ttl: int) -> str:
        token, token_digest = links.new_token()
        session.add(
            EmailToken(
                id=new_id("etk_"),
                user_id=user_id,
                purpose=purpose,
                digest=token_digest,
                created_at=utc(now),
                expires_at=utc(now + ttl),
            )
        )
        return token

    async def link_state(self, token: str) -> str:
        row = await self._token_row(token)
        return "invalid" if row is None else links.token_state(row.used_at, row.expires_at, self.clock.now())

    async def _token_row(self, token: str) -> EmailToken | None:
        async with self.db.session() as session:
            query = select(EmailToken).where(EmailToken.digest == links.digest(token))
            return (await session.execute(query)).scalars().first()

    async def reset(self, token: str, password: str) -> SignedIn:
        """Set the password from a reset or invitation link; signs the user in, everywhere else out."""
        row = await self._token_row(token)
        now = self.clock.now()
        state = "invalid" if row is None else links.token_state(row.used_at, row.expires_at, now)
        if row is None or state != "valid":
            raise links.refuse(
                state,
                used="This link was already used. Ask for a new one at /admin/auth/password/forgot.",
                expired="This link expired. Ask for a new one at /admin/auth/password/forgot.",
            )
        user = await self._user(row.user_id)
        await self.gateway.refuse_if_sso_enforced(user)
        password_hash = await self.policy.hash_new(password, user_inputs=[user.email, *user.email.split("@")])
        async with self.db.session() as session:
            used = await session.execute(
                update(EmailToken)
                .where(EmailToken.user_id == user.id, EmailToken.used_at.is_(None))  # type: ignore[union-attr]
                .values(used_at=utc(now))  # this link, and every other open link of the user
            )
            if used.rowcount == 0:  # type: ignore[attr-defined]
                raise links.refuse("used", used="This link was already used.", expired="")
            await self._set_password(
                session, user, password_hash, verified_at=user.email_verified_at or utc(now)
            )
        return self.sessions.issue(await self._user(user.id))

    # -- signed in -------------------------------------------------------------------------------

    async def change(self, user_id: str, current: str | None, new: str) -> SignedIn:
        """A new password for a signed-in user; their other sessions end, this one gets a new token."""
        user = await self._user(user_id)
        # A user without a password yet (passkey or invitation) sets a first one without it.
        if user.password_hash is not None and (
            current is None or not await verify_password(user.password_hash, current)
        ):
            raise ValidationFailed(
                "The current password is wrong.", code="current_password_wrong", param="current_password"
            )
        password_hash = await self.policy.hash_new(new, user_inputs=[user.email, *user.email.split("@")])
        async with self.db.session() as session:
            await self._set_password(session, user, password_hash, verified_at=user.email_verified_at)
        return self.sessions.issue(await self._user(user.id))

    async def sign_out(self, user_id: str) -> dict[str, Any]:
        await self.sessions.end_all(user_id)
        return {"object": "sign_out", "signed_out": True, "sessions": "all"}

    # -- invitation ------------------------------------------------------------------------------

    def invite(self, session: AsyncSession, tenant: Tenant, user: User, now: float) -> None:
        """Queue the first admin's invitation (a link to choose a password) in the caller's transaction.

        The caller calls ``mailer.wake()`` after its commit."""
        ttl = self.settings.invite_ttl_seconds
        token = self.add_token(session, user.id, INVITE, now, ttl)
        url = links.link(self.settings.app_base_url, links.RESET_PATH, token)
        enqueue(
            session,
            self.mailer.box,
            messages.invite(user.email, self.service_name, tenant.name, url, ttl),
            now,
        )

    # -- helpers ---------------------------------------------------------------------------------

    async def _user(self, user_id: str) -> User:
        async with self.db.session() as session:
            user = await session.get(User, user_id)
        if user is None:
            raise NotFound("This account no longer exists.", param="user")
        return user

    @staticmethod
    async def _set_password(
        session: AsyncSession, user: User, password_hash: str, *, verified_at: datetime | None
    ) -> None:
        await session.execute(
            update(User)
            .where(User.id == user.id)  # type: ignore[arg-type]
            .values(
                password_hash=password_hash,
                email_verified_at=verified_at,
                token_version=User.token_version + 1,
            )
        )
