"""Who switching single sign-on enforcement on affects, said before it is done.

Enforcement ends the sessions of every member who is not a platform administrator (enforcement.py)
and from then on lets them in only through the identity provider, which signs in only addresses of
the organisation's verified domains (provision.py). So a member whose address is in no verified
domain has no way back in: they are locked out until enforcement is off or their domain is verified.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from agent_server.accounts.sso.provision import PLATFORM_ADMIN, domain_of
from agent_server.accounts.tables import TenantDomain
from agent_server.gateway.tables import User
from agent_server.storage.db import Database

LISTED = 50  # addresses named per group; the counts are exact


@dataclass(frozen=True, slots=True)
class EnforcementImpact:
    signed_out: int  # members whose sessions end at once (everyone but platform administrators)
    locked_out: int  # of them, those whose address is in no verified domain of the organisation
    locked_out_emails: list[str] = field(default_factory=list)  # the first LISTED of them
    kept: list[str] = field(default_factory=list)  # platform administrators: password and passkey stay

    def view(self) -> dict[str, object]:
        return {
            "signed_out": self.signed_out,
            "locked_out": self.locked_out,
            "locked_out_emails": self.locked_out_emails,
            "platform_admins_kept": self.kept,
        }


async def enforcement_impact(db: Database, tenant_id: str) -> EnforcementImpact:
    async with db.session() as session:
        users = (
            await session.execute(select(User.email, User.permissions).where(User.tenant_id == tenant_id))
        ).all()
        verified = set(
            (
                await session.execute(
                    select(TenantDomain.domain).where(
                        TenantDomain.tenant_id == tenant_id,
                        TenantDomain.verified_at.is_not(None),  # type: ignore[union-attr]
                    )
                )
            ).scalars()
        )
    members = sorted(email for email, permissions in users if PLATFORM_ADMIN not in permissions)
    kept = sorted(email for email, permissions in users if PLATFORM_ADMIN in permissions)
    locked = [email for email in members if domain_of(email) not in verified]
    return EnforcementImpact(len(members), len(locked), locked[:LISTED], kept[:LISTED])
