"""Every read and write of the OAuth tables; async, called from authlib's hooks through bridge.py.

A code is taken by one atomic update (``used_at``), so two token requests with one code cannot both
win; a code presented again revokes the tokens it produced (OAuth 2.1, 4.1.3). A refresh token is
rotated by one atomic update too; presenting a rotated one again revokes its whole family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, select, update

from agent_server.foundation.clock import Clock
from agent_server.foundation.ids import new_id
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.timeutil import utc
from agent_server.gateway.auth import TOKEN_KEY_PREFIX
from agent_server.oauth.tables import OAuthClient, OAuthCode, OAuthConsent, OAuthToken
from agent_server.oauth.vocabulary import Owner, digest
from agent_server.storage.db import Database

if TYPE_CHECKING:
    from agent_server.oauth.models import Code, Token

# authlib's code and token shapes, which only its flows ask for (service.py builds them at first use).
models = lazy_module("agent_server.oauth.models")

CODE_SECONDS = 60
ACCESS_SECONDS = 900
REFRESH_SECONDS = 30 * 86_400


@dataclass(frozen=True, slots=True)
class Issued:
    """What a new token row needs besides the token itself."""

    family_id: str
    client_id: str
    owner: Owner
    scope: str
    resource: str


class OAuthStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db, self.clock = db, clock

    async def client(self, client_id: str) -> OAuthClient | None:
        async with self.db.session() as session:
            return await session.get(OAuthClient, client_id)

    async def add_client(self, row: OAuthClient) -> None:
        async with self.db.session() as session:
            session.add(row)

    async def put_client(self, row: OAuthClient) -> None:
        """Insert or refresh a client described by its metadata document."""
        async with self.db.session() as session:
            await session.merge(row)

    async def add_code(self, code: str, row: OAuthCode) -> None:
        now = self.clock.now()
        row.digest, row.created_at, row.expires_at = digest(code), utc(now), utc(now + CODE_SECONDS)
        async with self.db.session() as session:
            session.add(row)

    async def take_code(self, code: str, client_id: str) -> Code | None:
        """The code, taken for good; None when unknown, expired or already taken (which revokes
        the tokens issued for it)."""
        key, now = digest(code), utc(self.clock.now())
        async with self.db.session() as session:
            taken = await session.execute(
                update(OAuthCode)
                .where(
                    OAuthCode.digest == key,  # type: ignore[arg-type]
                    OAuthCode.client_id == client_id,  # type: ignore[arg-type]
                    OAuthCode.used_at.is_(None),  # type: ignore[union-attr]
                    OAuthCode.expires_at > now,  # type: ignore[arg-type,operator]
                )
                .values(used_at=now)
            )
            row = await session.get(OAuthCode, key)
            if taken.rowcount == 1 and row is not None:  # type: ignore[attr-defined]
                return models.Code(row)
            if row is not None and row.used_at is not None:
                await self._revoke_family(session, key, now)
        return None

    async def save_token(self, token: dict[str, Any], issued: Issued) -> None:
        now = self.clock.now()
        refresh = token.get("refresh_token")
        row = OAuthToken(
            id=new_id(TOKEN_KEY_PREFIX),
            family_id=issued.family_id,
            client_id=issued.client_id,
            user_id=issued.owner.user_id,
            tenant_id=issued.owner.tenant_id,
            scope=issued.scope,
            resource=issued.resource,
            access_digest=digest(token["access_token"]),
            refresh_digest=digest(refresh) if refresh else None,
            access_expires_at=utc(now + int(token.get("expires_in", ACCESS_SECONDS))),
            refresh_expires_at=utc(now + REFRESH_SECONDS) if refresh else None,
            created_at=utc(now),
        )
        async with self.db.session() as session:
            session.add(row)

    async def refresh_token(self, refresh: str) -> Token | None:
        """The token a refresh token belongs to; a rotated one revokes its family (reuse)."""
        now = utc(self.clock.now())
        async with self.db.session() as session:
            query = select(OAuthToken).where(OAuthToken.refresh_digest == digest(refresh))  # type: ignore[arg-type]
            row = (await session.execute(query)).scalars().first()
            if row is None or row.revoked_at is not None:
                return None
            if row.rotated_at is not None:
                await self._revoke_family(session, row.family_id, now)
                return None
            expired = (
                row.refresh_expires_at is None or row.refresh_expires_at.replace(tzinfo=now.tzinfo) <= now
            )
        return models.Token(row, expired)

    async def rotate(self, token: Token) -> bool:
        """Mark a refresh token used; False when another request used it first."""
        async with self.db.session() as session:
            done = await session.execute(
                update(OAuthToken)
                .where(OAuthToken.id == token.row.id, OAuthToken.rotated_at.is_(None))  # type: ignore[arg-type,union-attr]
                .values(rotated_at=utc(self.clock.now()))
            )
        return done.rowcount == 1  # type: ignore[attr-defined]

    async def access(self, access_token: str) -> OAuthToken | None:
        """A live access token's row (not revoked, not expired)."""
        now = utc(self.clock.now())
        query = select(OAuthToken).where(
            OAuthToken.access_digest == digest(access_token),  # type: ignore[arg-type]
            OAuthToken.revoked_at.is_(None),  # type: ignore[union-attr]
            OAuthToken.access_expires_at > now,  # type: ignore[arg-type,operator]
        )
        async with self.db.session() as session:
            return (await session.execute(query)).scalars().first()

    async def presented(self, token: str) -> Token | None:
        """An access or refresh token as presented, for introspection: its row, and whether that
        token (not its family) is no longer live (expired, rotated or revoked)."""
        key, now = digest(token), utc(self.clock.now())
        query = select(OAuthToken).where(
            (OAuthToken.access_digest == key) | (OAuthToken.refresh_digest == key)
        )  # type: ignore[arg-type,operator]
        async with self.db.session() as session:
            row = (await session.execute(query)).scalars().first()
        if row is None:
            return None
        if row.access_digest == key:
            ends = row.access_expires_at
        else:
            ends = row.refresh_expires_at if row.rotated_at is None else row.rotated_at
        return models.Token(row, ends is None or ends.replace(tzinfo=now.tzinfo) <= now)

    async def revoke(self, token: str, client_id: str) -> None:
        """RFC 7009: revoke the family of an access or refresh token of this client."""
        key, now = digest(token), utc(self.clock.now())
        async with self.db.session() as session:
            query = select(OAuthToken.family_id).where(
                OAuthToken.client_id == client_id,  # type: ignore[arg-type]
                (OAuthToken.access_digest == key) | (OAuthToken.refresh_digest == key),  # type: ignore[arg-type,operator]
            )
            family = await session.scalar(query)
            if family is not None:
                await self._revoke_family(session, family, now)

    @staticmethod
    async def _revoke_family(session: Any, family_id: str, now: Any) -> None:
        await session.execute(
            update(OAuthToken)
            .where(OAuthToken.family_id == family_id, OAuthToken.revoked_at.is_(None))  # type: ignore[arg-type,union-attr]
            .values(revoked_at=now)
        )

    # -- consent ---------------------------------------------------------------------------------

    async def connected(self, user_id: str) -> list[tuple[OAuthConsent, OAuthClient | None]]:
        """A person's remembered consents with their clients, newest first."""
        query = (
            select(OAuthConsent, OAuthClient)
            .outerjoin(OAuthClient, OAuthClient.client_id == OAuthConsent.client_id)  # type: ignore[arg-type]
            .where(OAuthConsent.user_id == user_id)  # type: ignore[arg-type]
            .order_by(OAuthConsent.created_at.desc())  # type: ignore[attr-defined]
        )
        async with self.db.session() as session:
            return [(consent, client) for consent, client in (await session.execute(query)).all()]

    async def disconnect(self, user_id: str, client_id: str) -> bool:
        """Forget the consent and revoke every token the client holds for this person, at once."""
        now = utc(self.clock.now())
        async with self.db.session() as session:
            gone = await session.execute(
                delete(OAuthConsent).where(
                    and_(OAuthConsent.user_id == user_id, OAuthConsent.client_id == client_id)  # type: ignore[arg-type]
                )
            )
            await session.execute(
                update(OAuthToken)
                .where(
                    OAuthToken.user_id == user_id,  # type: ignore[arg-type]
                    OAuthToken.client_id == client_id,  # type: ignore[arg-type]
                    OAuthToken.revoked_at.is_(None),  # type: ignore[union-attr]
                )
                .values(revoked_at=now)
            )
        return bool(gone.rowcount)  # type: ignore[attr-defined]

    async def consented(self, owner: Owner, client_id: str, scope: str) -> bool:
        async with self.db.session() as session:
            row = (
                (
                    await session.execute(
                        select(OAuthConsent).where(
                            OAuthConsent.user_id == owner.user_id,  # type: ignore[arg-type]
                            OAuthConsent.client_id == client_id,  # type: ignore[arg-type]
                            OAuthConsent.tenant_id == owner.tenant_id,  # type: ignore[arg-type]
                        )
                    )
                )
                .scalars()
                .first()
            )
        return row is not None and set(scope.split()) <= set(row.scope.split())

    async def remember(self, owner: Owner, client_id: str, scope: str) -> None:
        async with self.db.session() as session:
            await session.execute(
                delete(OAuthConsent).where(
                    and_(OAuthConsent.user_id == owner.user_id, OAuthConsent.client_id == client_id)  # type: ignore[arg-type]
                )
            )
            session.add(
                OAuthConsent(
                    user_id=owner.user_id,
                    tenant_id=owner.tenant_id,
                    client_id=client_id,
                    scope=scope,
                    created_at=utc(self.clock.now()),
                )
            )
