"""Self-serve registration (contract 5.5): e-mail, organisation, plan, and a password or a passkey.

``register`` records a pending registration and queues one mail in the same transaction; a passkey
registration queues it when its passkey is saved (``attach_passkey``), so a passkey the browser
failed to make leaves no mail behind. An e-mail that already has an account gets the same answer and
a different mail ("you have an account"), so the answer never tells whether an address is known. ``verify`` uses the link once: it creates the
tenant (trial from the plan) and its first admin, takes over the live keys anonymous agents got for
the address (agent_server/agent_auth/claims.py), and signs the admin in. Only self-serve plans are
offered (``plans.self_serve``: a list price); a negotiated plan is set by a platform administrator
with a contract end (docs/billing.md, "Plans").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from agent_server.accounts import links, messages
from agent_server.accounts.names import organisation_name
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.accounts.roles import OWNER
from agent_server.accounts.sessions import Sessions, SignedIn
from agent_server.accounts.tables import Registration
from agent_server.agent_auth.claims import claim_anonymous_keys
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from agent_server.gateway.tables import PlanRecord, Tenant, User
from agent_server.mail.outbox import Mail, enqueue
from agent_server.mail.service import Mailer
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.db import Database

PASSWORD, PASSKEY = "password", "passkey"
HOUR = 3600
FIRST_ADMIN = ["tenant:admin"]  # the person who registers owns the organisation (role owner)


class PasskeyCeremonies(Protocol):
    async def creation_options(
        self, *, state_key: str, user_handle: bytes, user_name: str, display_name: str, origin: str | None
    ) -> dict[str, Any]: ...

    async def verify_creation(self, *, state_key: str, credential: dict[str, Any]) -> dict[str, Any]: ...

    def store(self, session: Any, user_id: str, new: dict[str, Any], name: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class Application:
    email: str
    organisation: str
    plan: str
    password: str | None


@dataclass(frozen=True, slots=True)
class Pending:
    email: str
    plan_id: str
    organisation: str
    password_hash: str | None
    passkey: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Verified:
    signed_in: SignedIn
    user: User
    tenant: Tenant

    def body(self) -> dict[str, Any]:
        return {
            **self.signed_in.body(),
            "user": {"id": self.user.id, "email": self.user.email},
            "tenant": {
                "id": self.tenant.id,
                "name": self.tenant.name,
                "plan_id": self.tenant.plan_id,
                "trial_ends_at": iso(self.tenant.trial_ends_at),
            },
        }


def state_key(registration_id: str) -> str:
    return f"register-passkey:{registration_id}"


class Registrations:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        clock: Clock,
        mailer: Mailer,
        policy: PasswordPolicy,
        limiter: Limiter,
        sessions: Sessions,
        service_name: str,
    ) -> None:
        self.settings, self.db, self.clock, self.mailer = settings, db, clock, mailer
        self.policy, self.limiter, self.sessions, self.service_name = policy, limiter, sessions, service_name
        self.passkeys: PasskeyCeremonies | None = None  # set when passkeys are served
        self.per_ip = Policy("register-ip", settings.register_limit_per_ip, HOUR)
        self.per_email = Policy("register-email", settings.register_limit_per_email, HOUR)

    @property
    def methods(self) -> list[str]:
        return [PASSWORD, PASSKEY] if self.passkeys is not None else [PASSWORD]

    async def register(self, application: Application, ip: str, origin: str | None = None) -> dict[str, Any]:
        """Record the registration; ``origin`` is the page's, where a passkey is to be made."""
        email = application.email.strip().lower()
        organisation = organisation_name(application.organisation)
        await self.limiter.enforce(self.per_ip, ip)
        method = PASSWORD if application.password is not None else PASSKEY
        if method == PASSKEY and self.passkeys is None:
            raise ValidationFailed("Send a password: passkeys are not available here.", param="password")
        plan = await self._plan(application.plan)
        words = [email, organisation]
        if application.password is not None:
            await self.policy.check(application.password, user_inputs=words)
        # Counted after the checks: choosing a weak password three times must not lock the address out.
        await self.limiter.enforce(self.per_email, email)
        password_hash = None
        if application.password is not None:
            password_hash = await hash_password(application.password)
        now, ttl = self.clock.now(), self.settings.registration_link_ttl_seconds
        registration = Registration(
            id=new_id("reg_"),
            email=email,
            organisation=organisation,
            plan_id=plan.id,
            method=method,
            password_hash=password_hash,
            created_at=utc(now),
            expires_at=utc(now + ttl),
        )
        async with self.db.session() as session:
            session.add(registration)
            if method == PASSWORD:  # a passkey registration mails once its passkey is saved
                enqueue(session, self.mailer.box, await self._first_mail(session, registration, plan), now)
        if method == PASSWORD:
            self.mailer.wake()  # committed: send now rather than at the next poll
        minutes = ttl // 60
        sent = f"We sent a link to {email}. Follow it within {minutes} minutes to finish."
        answer: dict[str, Any] = {
            "object": "registration",
            "status": "verification_sent" if method == PASSWORD else "passkey_needed",
            "email": email,
            "method": method,
            "link_expires_in": ttl,
            "message": sent
            if method == PASSWORD
            else f"Create your passkey now; once it is saved, we send a link to {email} to finish.",
        }
        if method == PASSKEY:
            answer["registration_id"] = registration.id
            answer["passkey"] = await self._passkey_options(registration, origin)
        return answer

    async def _first_mail(self, session: Any, registration: Registration, plan: PlanRecord) -> Mail:
        """The link to confirm (its digest set on the registration), or for a known address the
        "you already have an account" mail, which holds no link."""
        base = self.settings.app_base_url
        if await session.scalar(select(User.id).where(User.email == registration.email)) is not None:
            return messages.already_registered(
                registration.email,
                self.service_name,
                f"{base}{links.SIGN_IN_PAGE}",
                f"{base}{links.FORGOT_PAGE}",
            )
        token, registration.token_digest = links.new_token()
        url = links.link(base, links.VERIFY_PAGE, token)
        ttl = self.settings.registration_link_ttl_seconds
        return messages.verify_email(
            registration.email,
            self.service_name,
            registration.organisation,
            plan.name,
            plan.trial_days,
            url,
            ttl,
        )

    async def _passkey_options(self, registration: Registration, origin: str | None) -> dict[str, Any]:
        assert self.passkeys is not None
        options = await self.passkeys.creation_options(
            state_key=state_key(registration.id),
            user_handle=registration.id.encode(),
            user_name=registration.email,
            display_name=registration.email,
            origin=origin,
        )
        return {"options": options, "finish": {"method": "POST", "path": "/register/passkey"}}

    async def attach_passkey(self, registration_id: str, credential: dict[str, Any]) -> dict[str, Any]:
        """Keep the passkey created at registration until the link is followed."""
        if self.passkeys is None:
            raise ValidationFailed("Passkeys are not available here.", param="credential")
        async with self.db.session() as session:
            registration = await session.get(Registration, registration_id)
        now = self.clock.now()
        if registration is None or registration.method != PASSKEY:
            raise ValidationFailed("No passkey registration with this id.", param="registration_id")
        state = links.token_state(registration.used_at, registration.expires_at, now)
        if state != "valid":
            raise ValidationFailed(
                "This registration is finished or expired. Once signed in, add passkeys with "
                "POST /admin/auth/passkeys/options; or register again.",
                code=f"registration_{state}",
                param="registration_id",
            )
        new = await self.passkeys.verify_creation(state_key=state_key(registration_id), credential=credential)
        plan = await self._plan(registration.plan_id)
        # The ceremony was taken above, once: a registration gets one passkey, and one mail.
        async with self.db.session() as session:  # the passkey and the mail that confirms, together
            mail = await self._first_mail(session, registration, plan)
            await session.execute(
                update(Registration)
                .where(Registration.id == registration_id, Registration.used_at.is_(None))  # type: ignore[union-attr]
                .values(passkey=new, token_digest=registration.token_digest)
            )
            enqueue(session, self.mailer.box, mail, now)
        self.mailer.wake()
        ttl = self.settings.registration_link_ttl_seconds
        return {
            "object": "registration",
            "status": "passkey_saved",
            "message": f"We sent a link to {registration.email}. Follow it within {ttl // 60} minutes to finish.",
            "next": "Follow the link in the e-mail.",
        }

    async def link_state(self, token: str) -> str:
        """valid, used, expired or invalid: what the link page says before anything is used up."""
        async with self.db.session() as session:
            query = select(Registration).where(Registration.token_digest == links.digest(token))
            registration = (await session.execute(query)).scalars().first()
        if registration is None:
            return "invalid"
        return links.token_state(registration.used_at, registration.expires_at, self.clock.now())

    async def verify(self, token: str, organisation: str | None = None) -> Verified:
        now = self.clock.now()
        async with self.db.session() as session:
            query = select(Registration).where(Registration.token_digest == links.digest(token))
            registration = (await session.execute(query)).scalars().first()
            state = (
                "invalid"
                if registration is None
                else links.token_state(registration.used_at, registration.expires_at, now)
            )
            if registration is None or state != "valid":
                raise self._refuse(state)
            # Copied first: the UPDATE below also refreshes the loaded object, erasing both.
            pending = Pending(
                registration.email,
                registration.plan_id,
                registration.organisation,
                registration.password_hash,
                registration.passkey,
            )
            claimed = await session.execute(
                update(Registration)
                .where(Registration.id == registration.id, Registration.used_at.is_(None))  # type: ignore[union-attr]
                .values(used_at=utc(now), password_hash=None, passkey=None)
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                raise self._refuse("used")
            tenant, user = await self._create(session, pending, organisation, now)
        return Verified(self.sessions.issue(user), user, tenant)

    async def _create(
        self, session: Any, pending: Pending, organisation: str | None, now: float
    ) -> tuple[Tenant, User]:
        """The tenant and its first admin, in the transaction that uses the link up."""
        plan = await session.get(PlanRecord, pending.plan_id)
        if plan is None or not plan.self_serve:
            raise ValidationFailed(
                f"The plan '{pending.plan_id}' is no longer offered; register again.",
                code="plan_not_purchasable",
                param="plan",
            )
        name = organisation_name(organisation) if organisation else pending.organisation
        tenant = repo.new_tenant(now, name, plan)
        user = repo.new_user(now, tenant.id, pending.email, pending.password_hash, FIRST_ADMIN, OWNER)
        user.email_verified_at = utc(now)
        try:
            session.add(tenant)
            await session.flush()
        except IntegrityError:
            raise Conflict(
                f"An organisation named '{name}' exists already. Follow the link again and send "
                "another name in the field 'organisation'.",
                code="organisation_taken",
                param="organisation",
            ) from None
        try:
            session.add(user)
            await session.flush()
        except IntegrityError:
            raise Conflict(
                "An account with this e-mail address exists already; sign in instead.", code="account_exists"
            ) from None
        if pending.passkey and self.passkeys is not None:
            self.passkeys.store(session, user.id, pending.passkey, "Passkey")
        await claim_anonymous_keys(session, pending.email, tenant.id, now)  # docs/oauth.md
        return tenant, user

    async def _plan(self, plan_id: str) -> PlanRecord:
        """A self-serve plan; a negotiated one (no list price) is 400 ``plan_not_purchasable``."""
        async with self.db.session() as session:
            plan = await session.get(PlanRecord, plan_id)
            if plan is not None and plan.self_serve:
                return plan
            query = select(PlanRecord.id).where(PlanRecord.self_serve).order_by(PlanRecord.id)  # type: ignore[arg-type]
            offered = ", ".join((await session.execute(query)).scalars())
        if plan is None:
            raise ValidationFailed(f"Unknown plan '{plan_id}'; choose one of {offered}.", param="plan")
        raise ValidationFailed(
            f"The {plan.name} plan is sold by contract, not by registration: choose one of {offered}, "
            "or talk to us about a contract.",
            code="plan_not_purchasable",
            param="plan",
        )

    @staticmethod
    def _refuse(state: str) -> ValidationFailed:
        return links.refuse(
            state,
            used="This link was already used: the account exists. Sign in at /admin/auth/login.",
            expired="This link expired. Register again to get a new one.",
        )
