"""Passwords of existing users: reset by e-mail link, invitation (a first password), change, sign-out.

Every path that sets a password goes through ``PasswordPolicy.hash_new``; every one that sets or
resets a password raises the user's token version, which ends their earlier sessions.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import links, messages
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.accounts.sessions import Sessions, SignedIn, require_recent_sign_in
from agent_server.accounts.sso.enforcement import is_enforced
from agent_server.accounts.tables import EmailToken
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotFound, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import verify_password
from agent_server.gateway.service import Gateway
from agent_server.gateway.tables import Tenant, User
from agent_server.gateway.tokens import AdminClaims
from agent_server.mail.outbox import enqueue
from agent_server.mail.service import Mailer
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.db import Database

RESET, INVITE = "password_reset", "invite"
HOUR = 3600
PASSWORD_CHANGES, PASSWORD_CHANGE_WINDOW = 10, 900  # per user: tries at the current password
log = logging.getLogger("agentgate.accounts")


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
        self.per_user = Policy("password-change", PASSWORD_CHANGES, PASSWORD_CHANGE_WINDOW)

    # -- reset by e-mail -------------------------------------------------------------------------

    async def forgot(self, email: str, ip: str) -> dict[str, Any]:
        """Count the request; the answer is the same for every address. ``send_reset`` runs after it."""
        email = email.strip().lower()
        await self.limiter.enforce(self.per_ip, ip)
        await self.limiter.enforce(self.per_email, email)
        return {
            "object": "password_reset",
            "status": "sent_if_known",
            "message": f"If {email} has an account, a reset link is on its way.",
        }

    async def send_reset(self, email: str) -> None:
        """Mail a reset link when the address has an account.

        Run after the answer was sent (a background task): looking the address up and queueing the
        mail take time, and an answer that waited for them would tell which addresses have accounts.
        """
        email = email.strip().lower()
        try:
            user = await repo.find_user(self.db, email)
            if user is None or await self._sso_only(user):
                return
            now, ttl = self.clock.now(), self.settings.password_reset_ttl_seconds
            async with self.db.session() as session:
                token = self.add_token(session, user.id, RESET, now, ttl)
                url = links.link(self.settings.app_base_url, links.RESET_PAGE, token)
                mail = messages.password_reset(email, self.service_name, url, ttl)
                enqueue(session, self.mailer.box, mail, now)
            self.mailer.wake()  # committed: send now rather than at the next poll
        except Exception:  # the person may ask again; nothing else depends on this mail
            log.exception("password reset mail not queued")

    async def _sso_only(self, user: User) -> bool:
        """Whether the user signs in through their tenant's provider only (so gets no reset mail)."""
        return "platform:admin" not in user.permissions and await is_enforced(
            self.db, user.tenant_id, self.gateway.catalog
        )

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
            # This very link, once: a request that checked it a moment ago must not use it again.
            used = await session.execute(
                update(EmailToken)
                .where(EmailToken.id == row.id, EmailToken.used_at.is_(None))  # type: ignore[union-attr]
                .values(used_at=utc(now))
            )
            if used.rowcount != 1:  # type: ignore[attr-defined]
                raise links.refuse("used", used="This link was already used.", expired="")
            await self._close_links(session, user.id, now)
            await self._set_password(
                session, user, password_hash, verified_at=user.email_verified_at or utc(now)
            )
        return self.sessions.issue(await self._user(user.id))

    # -- signed in -------------------------------------------------------------------------------

    async def change(self, claims: AdminClaims, current: str | None, new: str) -> SignedIn:
        """A new password for a signed-in user; their other sessions and open links end."""
        await self.limiter.enforce(self.per_user, claims.user_id)  # no guessing the current one
        user = await self._user(claims.user_id)
        if user.password_hash is None:
            # A first password (passkey or SSO user) adds a way in: it needs a fresh sign-in instead.
            require_recent_sign_in(claims, self.clock.now(), "set a first password")
        elif current is None or not await verify_password(user.password_hash, current):
            raise ValidationFailed(
                "The current password is wrong.", code="current_password_wrong", param="current_password"
            )
        password_hash = await self.policy.hash_new(new, user_inputs=[user.email, *user.email.split("@")])
        async with self.db.session() as session:
            await self._close_links(session, user.id, self.clock.now())
            await self._set_password(session, user, password_hash, verified_at=user.email_verified_at)
        return self.sessions.issue(await self._user(user.id))

    async def sign_out(self, user_id: str) -> dict[str, Any]:
        """End every session of the user, and every reset link still open."""
        async with self.db.session() as session:
            await self._close_links(session, user_id, self.clock.now())
        await self.sessions.end_all(user_id)
        return {"object": "sign_out", "signed_out": True, "sessions": "all"}

    @staticmethod
    async def _close_links(session: AsyncSession, user_id: str, now: float) -> None:
        await session.execute(
            update(EmailToken)
            .where(EmailToken.user_id == user_id, EmailToken.used_at.is_(None))  # type: ignore[union-attr]
            .values(used_at=utc(now))
        )

    # -- invitation ------------------------------------------------------------------------------

    def invite(self, session: AsyncSession, tenant: Tenant, user: User, now: float) -> None:
        """Queue the first admin's invitation (a link to choose a password) in the caller's transaction.

        The caller calls ``mailer.wake()`` after its commit."""
        ttl = self.settings.invite_ttl_seconds
        token = self.add_token(session, user.id, INVITE, now, ttl)
        url = links.link(self.settings.app_base_url, links.RESET_PAGE, token)
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
