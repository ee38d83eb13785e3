"""Invitations to an organisation (docs/accounts.md, "Members and roles"): create, resend, revoke, accept.

An invitation names an e-mail address and a role (not owner: ownership goes to members). Its link is
``<app_url>/app/invitations/accept?token=…``; only the token's SHA-256 is stored, it works once and
expires after ``AGENTGATE_INVITE_TTL_SECONDS``. Resending mails a new link (the earlier one stops
working) with a new expiry. The mail is queued in the transaction that writes the invitation.

Accepting: a new person chooses a password (the password rule); a person with an account and no
organisation (who left or was removed) accepts signed in as that address. Members of an organisation
that enforces single sign-on come in through its provider only: the link's page sends them there, and
the just-in-time step (``sso/provision.py``) gives them the invitation's role.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import invitation_store as store
from agent_server.accounts import links, messages
from agent_server.accounts.members import Acting, lock_tenant
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.accounts.roles import INVITABLE, checked_role, permissions_with
from agent_server.accounts.sessions import Sessions, SignedIn
from agent_server.accounts.sso.enforcement import is_enforced
from agent_server.accounts.sso.provision import domain_of, tenant_for_domain
from agent_server.accounts.tables import Invitation
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError, Conflict, NotFound, PermissionDenied, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway import repository as repo
from agent_server.gateway.plans import PlanCatalog
from agent_server.gateway.tables import Tenant, User
from agent_server.gateway.tokens import AdminClaims
from agent_server.mail.outbox import enqueue
from agent_server.mail.service import Mailer
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.db import Database

PER_TENANT = Policy("invitations", 50, 3600)  # mails to any address: bounded per organisation
LIST_LIMIT = 200


class Invitations:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        clock: Clock,
        mailer: Mailer,
        policy: PasswordPolicy,
        limiter: Limiter,
        sessions: Sessions,
        catalog: PlanCatalog,
        service_name: str,
    ) -> None:
        self.settings, self.db, self.clock, self.mailer = settings, db, clock, mailer
        self.policy, self.limiter, self.sessions, self.catalog = policy, limiter, sessions, catalog
        self.service_name = service_name

    # -- an admin's side -------------------------------------------------------------------------

    async def create(self, acting: Acting, email: str, role: str) -> Invitation:
        email, role = email.strip().lower(), checked_role(role, INVITABLE)
        await self.limiter.enforce(PER_TENANT, acting.tenant_id)
        now = self.clock.now()
        sso = await is_enforced(self.db, acting.tenant_id, self.catalog)
        if sso and await tenant_for_domain(self.db, domain_of(email)) != acting.tenant_id:
            raise ValidationFailed(
                "This organisation signs in through its identity provider only; invite addresses of its "
                "verified domains.",
                code="invitation_domain_not_verified",
                param="email",
            )
        async with self.db.session() as session:
            await lock_tenant(session, acting.tenant_id)  # one pending invitation per address
            member = await session.scalar(
                select(User.id).where(User.email == email, User.tenant_id == acting.tenant_id)
            )
            if member is not None:
                raise Conflict(f"{email} is a member already.", code="already_member", param="email")
            if await store.pending_for(session, acting.tenant_id, email, now) is not None:
                raise Conflict(
                    f"{email} has a pending invitation; resend it instead.",
                    code="invitation_pending",
                    param="email",
                )
            invitation = Invitation(
                id=new_id("inv_"),
                tenant_id=acting.tenant_id,
                email=email,
                role=role,
                invited_by=acting.user_id,
                digest="",
                created_at=utc(now),
                sent_at=utc(now),
                expires_at=utc(now),
            )
            session.add(invitation)
            await self._send(session, invitation, now, sso)
        self.mailer.wake()
        return invitation

    async def list(self, tenant_id: str) -> list[Invitation]:
        query = (
            select(Invitation)
            .where(Invitation.tenant_id == tenant_id)
            .order_by(Invitation.created_at.desc(), Invitation.id.desc())  # type: ignore[attr-defined]
            .limit(LIST_LIMIT)
        )
        async with self.db.session() as session:
            return list((await session.execute(query)).scalars())

    async def resend(self, acting: Acting, invitation_id: str) -> Invitation:
        """A new link (the earlier one stops working) with a new expiry; pending or expired only."""
        await self.limiter.enforce(PER_TENANT, acting.tenant_id)
        now = self.clock.now()
        sso = await is_enforced(self.db, acting.tenant_id, self.catalog)
        async with self.db.session() as session:
            invitation = await self._open(session, acting.tenant_id, invitation_id, now)
            invitation.sends += 1
            await self._send(session, invitation, now, sso)
        self.mailer.wake()
        return invitation

    async def revoke(self, acting: Acting, invitation_id: str) -> Invitation:
        now = self.clock.now()
        async with self.db.session() as session:
            invitation = await _of_tenant(session, acting.tenant_id, invitation_id)
            if invitation.revoked_at is None:
                await self._open(session, acting.tenant_id, invitation_id, now)
                invitation.revoked_at = utc(now)
        return invitation

    async def _open(
        self, session: AsyncSession, tenant_id: str, invitation_id: str, now: float
    ) -> Invitation:
        invitation = await _of_tenant(session, tenant_id, invitation_id)
        if store.state_of(invitation, now) in (store.ACCEPTED, store.REVOKED):
            raise Conflict(
                f"This invitation was {store.state_of(invitation, now)} already.", code="invitation_closed"
            )
        return invitation

    async def _send(self, session: AsyncSession, invitation: Invitation, now: float, sso: bool) -> None:
        ttl = self.settings.invite_ttl_seconds
        token, invitation.digest = links.new_token()
        invitation.sent_at, invitation.expires_at = utc(now), utc(now + ttl)
        tenant = await session.get(Tenant, invitation.tenant_id)
        inviter = await session.get(User, invitation.invited_by)
        url = links.link(self.settings.app_base_url, links.INVITE_PAGE, token)
        mail = messages.member_invite(
            invitation.email,
            self.service_name,
            tenant.name if tenant else invitation.tenant_id,
            inviter.email if inviter else "An administrator",
            invitation.role,
            url,
            ttl,
            sso=sso,
        )
        enqueue(session, self.mailer.box, mail, now)

    # -- the invited person's side ---------------------------------------------------------------

    async def describe(self, token: str) -> dict[str, Any]:
        """What the link does; uses nothing up. ``account``: new, or existing (sign in to accept)."""
        now = self.clock.now()
        async with self.db.session() as session:
            invitation = await store.by_token(session, token) if token else None
            if invitation is None:
                return {"object": "invitation_link", "state": "invalid"}
            tenant = await session.get(Tenant, invitation.tenant_id)
            existing = await session.scalar(select(User.id).where(User.email == invitation.email))
        return {
            "object": "invitation_link",
            "state": store.state_of(invitation, now),
            "email": invitation.email,
            "role": invitation.role,
            "organisation": tenant.name if tenant else None,
            "expires_at": iso(invitation.expires_at),
            "account": "existing" if existing else "new",
            "sso_required": await is_enforced(self.db, invitation.tenant_id, self.catalog),
        }

    async def accept_new(self, token: str, password: str) -> SignedIn:
        """A new account for the invited address, with the invitation's role; signs it in."""
        invitation, tenant = await self._usable(token)
        if await repo.find_user(self.db, invitation.email) is not None:
            raise Conflict(
                f"{invitation.email} has an account already: sign in, then open the link again.",
                code="account_exists",
            )
        email = invitation.email
        password_hash = await self.policy.hash_new(
            password, user_inputs=[email, *email.split("@"), tenant.name]
        )
        now = self.clock.now()
        user = repo.new_user(now, tenant.id, email, password_hash, [], invitation.role)
        user.email_verified_at = utc(now)  # the link came to this address
        try:
            async with self.db.session() as session:
                session.add(user)
                await session.flush()
                if not await store.claim(session, invitation, user.id, now):
                    raise self._refusal(await self._state(token))
        except IntegrityError:  # the same address accepted a moment ago
            raise Conflict(f"{email} has an account already.", code="account_exists") from None
        return self.sessions.issue(user)

    async def accept_signed_in(self, token: str, claims: AdminClaims) -> SignedIn:
        """The signed-in person (the invited address, of no organisation) joins; a new session."""
        invitation, tenant = await self._usable(token)
        now = self.clock.now()
        async with self.db.session() as session:
            user = await session.get(User, claims.user_id)
            if user is None or user.email != invitation.email:
                raise PermissionDenied(
                    f"This invitation is for {invitation.email}; sign in with that address.",
                    code="invitation_other_address",
                )
            if user.tenant_id == tenant.id:
                raise Conflict("You are a member of this organisation already.", code="already_member")
            if user.tenant_id is not None:
                raise Conflict(
                    "You are a member of another organisation; leave it first (Account page).",
                    code="member_elsewhere",
                )
            if not await store.claim(session, invitation, user.id, now):
                raise self._refusal(await self._state(token))
            user.tenant_id, user.role = tenant.id, invitation.role
            user.permissions = permissions_with(user.permissions, invitation.role)
            user.email_verified_at = user.email_verified_at or utc(now)
        return self.sessions.issue(user)

    async def _usable(self, token: str) -> tuple[Invitation, Tenant]:
        async with self.db.session() as session:
            invitation = await store.by_token(session, token)
            tenant = await session.get(Tenant, invitation.tenant_id) if invitation else None
        if (
            invitation is None
            or tenant is None
            or store.state_of(invitation, self.clock.now()) != store.PENDING
        ):
            raise self._refusal(await self._state(token))
        if await is_enforced(self.db, tenant.id, self.catalog):
            raise PermissionDenied(
                f"{tenant.name} signs in through its identity provider: accept with single sign-on "
                "(the link's page, or POST /sso/discover with your e-mail address).",
                code="sso_required",
            )
        return invitation, tenant

    async def _state(self, token: str) -> str:
        async with self.db.session() as session:
            invitation = await store.by_token(session, token)
        return "invalid" if invitation is None else store.state_of(invitation, self.clock.now())

    @staticmethod
    def _refusal(state: str) -> AgentError:
        if state == store.REVOKED:
            return ValidationFailed(
                "This invitation was withdrawn; ask an administrator for a new one.",
                code="invitation_revoked",
                param="token",
            )
        return links.refuse(
            "used" if state == store.ACCEPTED else state,
            used="This invitation was accepted already; sign in.",
            expired="This invitation expired; ask an administrator to send it again.",
        )


async def _of_tenant(session: AsyncSession, tenant_id: str, invitation_id: str) -> Invitation:
    invitation = await session.get(Invitation, invitation_id)
    if invitation is None or invitation.tenant_id != tenant_id:
        raise NotFound(f"No invitation {invitation_id}.", param="invitation_id")
    return invitation
