"""Admin sessions: a JWT carries the user's token version; raising the version ends every earlier JWT.

Sign-out and password changes raise it (docs/accounts.md, "Sessions"). The check reads the user's
row on every admin request (one primary-key query): the database is the one source of truth in every
deployment, so a sign-out holds at once in every process, with or without Redis.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import select, update

from agent_server.foundation.errors import PermissionDenied
from agent_server.gateway.tables import User
from agent_server.gateway.tokens import AdminClaims, TokenService
from agent_server.storage.db import Database


@dataclass(frozen=True, slots=True)
class SignedIn:
    access_token: str
    expires_in: int
    user_id: str
    tenant_id: str

    def body(self) -> dict[str, object]:
        return {
            "access_token": self.access_token,
            "token_type": "bearer",
            "expires_in": self.expires_in,
            "user_id": self.user_id,
            "tenant_id": self.tenant_id,
        }


class Sessions:
    def __init__(self, db: Database, tokens: TokenService) -> None:
        self.db, self.tokens = db, tokens

    def issue(self, user: User) -> SignedIn:
        tenant_id = user.tenant_id or ""  # "": no organisation (left or removed)
        token, ttl = self.tokens.issue(
            user.id, tenant_id, list(user.permissions), user.token_version, user.role
        )
        return SignedIn(token, ttl, user.id, tenant_id)

    async def check(self, claims: AdminClaims) -> AdminClaims:
        """The claims as they hold now: 401 when the user is gone, moved or signed out since the token
        was issued; otherwise with the user's current role, and only the permissions both the token
        and the user still hold (a role change applies at the next request; roles.py)."""
        query = select(User.token_version, User.tenant_id, User.role, User.permissions).where(
            User.id == claims.user_id
        )
        async with self.db.session() as session:
            row = (await session.execute(query)).first()
        if row is None or row[0] != claims.version or (row[1] or "") != claims.tenant_id:
            raise self.tokens.invalid("This session has ended; sign in again at /admin/auth/login.")
        return replace(claims, role=row[2], permissions=claims.permissions & frozenset(row[3]))

    async def end_all(self, user_id: str) -> int:
        """End every session of the user; returns the new token version."""
        async with self.db.session() as session:
            await session.execute(
                update(User).where(User.id == user_id).values(token_version=User.token_version + 1)  # type: ignore[arg-type]
            )
            version = await session.scalar(select(User.token_version).where(User.id == user_id))
        return int(version or 0)


RECENT_SIGN_IN_SECONDS = 600


def require_recent_sign_in(claims: AdminClaims, now: float, what: str) -> None:
    """Adding a way in (a passkey, a first password) needs a sign-in of the last 10 minutes, so a
    token taken later in its life cannot leave a credential behind that outlives it."""
    if now - claims.issued_at > RECENT_SIGN_IN_SECONDS:
        raise PermissionDenied(
            f"To {what}, sign in again first (your sign-in is more than "
            f"{RECENT_SIGN_IN_SECONDS // 60} minutes old).",
            code="recent_sign_in_required",
        )
