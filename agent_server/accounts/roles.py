"""Members' roles and who may call what: the vocabulary of the route policy (docs/accounts.md, "Roles").

A member of an organisation has one role (``users.role``). The route policy
(``http_facade/role_policy.py``) names, for every route, an ``Access``: public, any signed-in user,
platform administrators, or members holding one of a set of roles. The role is read from the user's
row on every request (the session check reads that row anyway), so a role change applies at the
member's next request and a removal ends their sessions.

``tenant:admin`` in ``users.permissions`` predates roles; it is kept, set exactly for owners and
admins (``permissions_with``), for readers that still look for it (version reminder mails, the JWT's
``permissions`` claim). Access decisions never read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agent_server.foundation.errors import PermissionDenied, ValidationFailed
from agent_server.gateway.tokens import AdminClaims

OWNER, ADMIN, DEVELOPER, VIEWER, BILLING = "owner", "admin", "developer", "viewer", "billing"
ROLES = (OWNER, ADMIN, DEVELOPER, VIEWER, BILLING)
INVITABLE = (ADMIN, DEVELOPER, VIEWER, BILLING)  # ownership goes to members only: role change, transfer
TENANT_ADMIN, PLATFORM_ADMIN = "tenant:admin", "platform:admin"
ROLE_TEXT = {
    OWNER: "everything, including owners and ownership",
    ADMIN: "everything but owners and ownership",
    DEVELOPER: "API keys, playground, logs and usage; reads the rest but billing, members and SSO",
    VIEWER: "reads everything but billing; changes nothing",
    BILLING: "billing only",
}


def permissions_with(permissions: Iterable[str], role: str | None) -> list[str]:
    """``permissions`` with ``tenant:admin`` present exactly when ``role`` is owner or admin."""
    kept = {p for p in permissions if p != TENANT_ADMIN}
    if role in (OWNER, ADMIN):
        kept.add(TENANT_ADMIN)
    return sorted(kept)


def role_from_permissions(permissions: Iterable[str]) -> str | None:
    """The role of a user made the way users were made before roles: ``tenant:admin`` is an admin."""
    return ADMIN if TENANT_ADMIN in permissions else None


def checked_role(role: str, allowed: tuple[str, ...] = ROLES, param: str = "role") -> str:
    if role not in allowed:
        raise ValidationFailed(
            f"Unknown or unassignable role '{role}'; use one of {', '.join(allowed)}.",
            code="invalid_role",
            param=param,
        )
    return role


@dataclass(frozen=True, slots=True)
class Access:
    """Who may call a route. ``name`` is how the policy table spells it (failure messages use it)."""

    name: str
    roles: frozenset[str] = field(default_factory=frozenset)
    public: bool = False  # no sign-in needed
    signed_in: bool = False  # any signed-in user: their own account (password, passkeys, leaving)
    platform: bool = False  # platform administrators, whatever their role

    def allows(self, claims: AdminClaims) -> bool:
        if self.public or self.signed_in:
            return True
        if self.platform:
            return PLATFORM_ADMIN in claims.permissions
        return bool(claims.tenant_id) and claims.role in self.roles

    def check(self, claims: AdminClaims, what: str) -> None:
        """403 ``role_not_allowed`` unless the claims pass; ``what`` names the route for the message."""
        if self.allows(claims):
            return
        if self.platform:
            needs = "the platform:admin permission"
        elif not self.roles:
            needs = "an entry in the route policy, which it lacks (so nobody may call it)"
        else:
            needs = f"one of the roles {', '.join(r for r in ROLES if r in self.roles)}"
        held = (
            f"your role is {claims.role}"
            if claims.role and claims.tenant_id
            else "you have no role in an organisation"
        )
        raise PermissionDenied(f"{what} needs {needs}; {held}.", code="role_not_allowed")


def _roles(*names: str) -> frozenset[str]:
    return frozenset(names)


# The access levels of the route policy, most open first.
PUBLIC = Access("PUBLIC", public=True)
SELF = Access("SELF", signed_in=True)
READERS = Access("READERS", _roles(OWNER, ADMIN, DEVELOPER, VIEWER))  # the tenant's data, read-only
PEOPLE_READERS = Access("PEOPLE_READERS", _roles(OWNER, ADMIN, VIEWER))  # members, invitations, SSO
BUILDERS = Access("BUILDERS", _roles(OWNER, ADMIN, DEVELOPER))  # keys and the playground
BILLERS = Access("BILLERS", _roles(OWNER, ADMIN, BILLING))  # billing, read and write
ADMINS = Access("ADMINS", _roles(OWNER, ADMIN))  # the tenant's settings and members
OWNERS = Access("OWNERS", _roles(OWNER))  # ownership
PLATFORM = Access("PLATFORM", platform=True)
NOBODY = Access("NOBODY")  # a route without a policy entry
LEVELS = (PUBLIC, SELF, READERS, PEOPLE_READERS, BUILDERS, BILLERS, ADMINS, OWNERS, PLATFORM)
