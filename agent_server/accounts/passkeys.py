"""Passkeys (WebAuthn, verified by py_webauthn): creation and sign-in ceremonies, credentials per user.

- The relying party's id, name and origins come from settings (``RelyingParty.from_settings``); in
  sandbox mode without a configured id, from the origin of the page that starts a ceremony. The
  ceremony keeps the id and origins it was started with, and its answer is checked against them.
- A ceremony's challenge waits in the KV for ``CEREMONY_SECONDS`` and the answer takes it, once
  (passkey_ceremonies.py): a replayed or late answer finds nothing and is refused.
- User verification is required: a passkey replaces the password, so it must prove the person too.
- Every passkey is discoverable (resident key required), so sign-in options never list credentials:
  ``allowCredentials`` is empty whatever the e-mail, and the answer is the same for every address
  (only the challenge and state differ). A given e-mail stays in the ceremony state, to check that
  the passkey used is that user's.
- Adding a passkey to an existing account queues a notice to the user in the transaction that
  stores it (not at registration: the account is new then).
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import passkey_store as store
from agent_server.accounts.passkey_ceremonies import CEREMONY_SECONDS, Ceremonies
from agent_server.accounts.passkey_relying_party import RelyingParty
from agent_server.accounts.passkey_tables import MAX_CREDENTIAL_ID_CHARS, MAX_NAME_CHARS, PasskeyCredential
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, Conflict, NotFound, ValidationFailed
from agent_server.foundation.ids import new_id
from agent_server.foundation.lazy import lazy_module
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import User
from agent_server.gateway.tokens import bearer_challenge
from agent_server.mail.outbox import Mail, enqueue
from agent_server.mail.service import Mailer
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.storage.db import Database
from agent_server.storage.kv import KV

webauthn = lazy_module("webauthn")  # py_webauthn and its crypto stack load at the first ceremony
helpers = lazy_module("webauthn.helpers")
structs = lazy_module("webauthn.helpers.structs")
cose = lazy_module("webauthn.helpers.cose")


@functools.cache
def algorithms() -> list[Any]:
    # ES256 first (every platform authenticator has it), then Ed25519 and RS256 (Windows Hello).
    return [cose.COSEAlgorithmIdentifier(alg) for alg in (-7, -8, -257)]


@functools.cache
def transports() -> dict[str, Any]:
    return {t.value: t for t in structs.AuthenticatorTransport}


# Sign-in options are anonymous and each keeps a challenge for minutes: bound them per client.
SIGN_IN_OPTIONS = Policy("passkey-sign-in", 30, 60, fail_open=True)
CREATE, GET = "passkey-create", "passkey-get"
MAX_REASON_CHARS = 300


class Passkeys:
    def __init__(self, settings: Settings, db: Database, kv: KV, clock: Clock, rp_name: str) -> None:
        self.rp = RelyingParty.from_settings(settings, rp_name)
        self.db, self.kv, self.clock = db, kv, clock
        self.ceremonies = Ceremonies(kv)
        self.limiter = Limiter(kv, clock, prefix="rl-passkeys")
        self._challenge = {"WWW-Authenticate": bearer_challenge(settings.service_name)}

    # -- creation: at registration and for signed-in users -----------------------------------------

    async def creation_options(
        self,
        *,
        state_key: str,
        user_handle: bytes,
        user_name: str,
        display_name: str,
        exclude: Sequence[bytes] = (),
        origin: str | None = None,
    ) -> dict[str, Any]:
        """Options for ``navigator.credentials.create()`` on a page at ``origin``; the challenge waits
        under ``state_key``."""
        rp = self.rp.for_origin(origin)
        options = webauthn.generate_registration_options(
            rp_id=rp.id,
            rp_name=rp.name,
            user_id=user_handle,
            user_name=user_name,
            user_display_name=display_name,
            timeout=CEREMONY_SECONDS * 1000,
            authenticator_selection=structs.AuthenticatorSelectionCriteria(
                resident_key=structs.ResidentKeyRequirement.REQUIRED,
                user_verification=structs.UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[structs.PublicKeyCredentialDescriptor(id=c) for c in exclude],
            supported_pub_key_algs=algorithms(),
        )
        state = {
            "challenge": helpers.bytes_to_base64url(options.challenge),
            "user_handle": helpers.bytes_to_base64url(user_handle),
            **_party(rp),
        }
        await self.ceremonies.keep(f"{CREATE}:{state_key}", state)
        return helpers.options_to_json_dict(options)

    async def verify_creation(self, *, state_key: str, credential: dict[str, Any]) -> dict[str, Any]:
        """Check the authenticator's answer (once); a JSON-ready record of the new credential."""
        state = await self.ceremonies.take(f"{CREATE}:{state_key}", "credential")
        try:
            verified = webauthn.verify_registration_response(
                credential=credential,
                expected_challenge=helpers.base64url_to_bytes(state["challenge"]),
                expected_rp_id=state.get("rp_id", self.rp.id),
                expected_origin=state.get("origins", list(self.rp.origins)),
                require_user_verification=True,
                supported_pub_key_algs=algorithms(),
            )
        except (
            Exception
        ) as exc:  # the library only parses and checks: whatever it raises is the input's fault
            raise ValidationFailed(
                _reason("The passkey could not be verified", exc), code="passkey_invalid", param="credential"
            ) from None
        credential_id = helpers.bytes_to_base64url(verified.credential_id)
        if len(credential_id) > MAX_CREDENTIAL_ID_CHARS:
            raise ValidationFailed(
                "The credential id is too long.", code="passkey_invalid", param="credential"
            )
        if await store.by_credential_id(self.db, credential_id) is not None:
            raise Conflict(
                "This passkey is already registered.", code="passkey_already_registered", param="credential"
            )
        return {
            "credential_id": credential_id,
            "public_key": helpers.bytes_to_base64url(verified.credential_public_key),
            "sign_count": verified.sign_count,
            "user_handle": state["user_handle"],
            "transports": _transports(credential),
            "aaguid": verified.aaguid,
            "backed_up": verified.credential_backed_up,
        }

    def store(self, session: AsyncSession, user_id: str, new: dict[str, Any], name: str) -> PasskeyCredential:
        """Add the credential ``verify_creation`` returned to the caller's session (and transaction)."""
        row = PasskeyCredential(
            id=new_id("pk_"),
            user_id=user_id,
            credential_id=new["credential_id"],
            public_key=helpers.base64url_to_bytes(new["public_key"]),
            sign_count=int(new["sign_count"]),
            user_handle=helpers.base64url_to_bytes(new["user_handle"]),
            transports=list(new["transports"]),
            aaguid=new["aaguid"],
            backed_up=bool(new["backed_up"]),
            name=_name(name),
            created_at=utc(self.clock.now()),
        )
        session.add(row)
        return row

    # -- a signed-in user's passkeys ---------------------------------------------------------------

    async def options_for(self, user_id: str, origin: str | None = None) -> dict[str, Any]:
        """Creation options for an existing user, excluding the authenticators they already use."""
        async with self.db.session() as session:
            user = await session.get(User, user_id)
        if user is None:
            raise NotFound("This user no longer exists.", code="user_not_found")
        rows = await store.for_user(self.db, user_id)
        # One handle per account: an authenticator then replaces its old passkey for it, never doubles it.
        handle = bytes(rows[0].user_handle) if rows else user_id.encode()
        return await self.creation_options(
            state_key=f"user:{user_id}",
            user_handle=handle,
            user_name=user.email,
            display_name=user.email,
            exclude=[helpers.base64url_to_bytes(row.credential_id) for row in rows],
            origin=origin,
        )

    async def add(
        self, user_id: str, credential: dict[str, Any], name: str, mailer: Mailer
    ) -> PasskeyCredential:
        """Store a new passkey of an existing user and, in the same transaction, queue the notice
        telling them (a passkey added with a stolen session must not go unseen)."""
        new = await self.verify_creation(state_key=f"user:{user_id}", credential=credential)
        now = self.clock.now()
        async with self.db.session() as session:
            user = await session.get(User, user_id)
            if user is None:
                raise NotFound("This user no longer exists.", code="user_not_found")
            row = self.store(session, user_id, new, name)
            enqueue(session, mailer.box, self._added_notice(user.email, row.name, now), now)
        mailer.wake()  # committed: send now rather than at the next poll
        return row

    async def of_user(self, user_id: str) -> list[PasskeyCredential]:
        return await store.for_user(self.db, user_id)

    async def rename(self, user_id: str, passkey_id: str, name: str) -> PasskeyCredential:
        return await store.rename(self.db, user_id, passkey_id, _name(name))

    async def remove(self, user_id: str, passkey_id: str) -> None:
        await store.remove(self.db, user_id, passkey_id)

    # -- sign-in -------------------------------------------------------------------------------------

    async def request_options(
        self, email: str | None, client: str, origin: str | None = None
    ) -> dict[str, Any]:
        """Options for ``navigator.credentials.get()`` on a page at ``origin`` and the opaque ``state``
        to send back."""
        await self.limiter.enforce(SIGN_IN_OPTIONS, client)
        rp = self.rp.for_origin(origin)
        owner: str | None = None  # None: any account; "": nobody (unknown address or no passkeys)
        if email is not None:
            rows = await store.for_email(self.db, email.strip().lower())
            owner = rows[0].user_id if rows else ""
        # Always a discoverable-credential request (every passkey here is resident): listing the
        # address's credentials would tell who has passkeys, by their ids, lengths and transports.
        options = webauthn.generate_authentication_options(
            rp_id=rp.id,
            timeout=CEREMONY_SECONDS * 1000,
            allow_credentials=[],
            user_verification=structs.UserVerificationRequirement.REQUIRED,
        )
        state = secrets.token_urlsafe(24)
        await self.ceremonies.keep(
            f"{GET}:{state}",
            {"challenge": helpers.bytes_to_base64url(options.challenge), "owner": owner, **_party(rp)},
        )
        return {"state": state, "options": helpers.options_to_json_dict(options)}

    async def authenticate(self, state: str, credential: dict[str, Any]) -> User:
        """The user whose passkey answered the challenge of ``state`` (once); 401 for anything wrong."""
        saved = await self.ceremonies.take(f"{GET}:{state}", "state")
        try:
            parsed = helpers.parse_authentication_credential_json(credential)
        except Exception as exc:
            raise self._rejected(_reason("The passkey answer is malformed", exc)) from None
        row = await store.by_credential_id(self.db, helpers.bytes_to_base64url(parsed.raw_id))
        owner = saved["owner"]
        if row is None or (owner is not None and row.user_id != owner):
            raise self._rejected("This passkey is not registered here; sign in another way.")
        handle = parsed.response.user_handle
        # A discoverable sign-in names its account only by the handle: it must be there and match.
        if (handle or owner is None) and handle != bytes(row.user_handle):
            raise self._rejected("The passkey's user handle does not belong to its account.")
        try:
            verified = webauthn.verify_authentication_response(
                credential=parsed,
                expected_challenge=helpers.base64url_to_bytes(saved["challenge"]),
                expected_rp_id=saved.get("rp_id", self.rp.id),
                expected_origin=saved.get("origins", list(self.rp.origins)),
                credential_public_key=bytes(row.public_key),
                credential_current_sign_count=row.sign_count,
                require_user_verification=True,
            )
        except Exception as exc:  # as above: only the input can make the checks raise
            raise self._rejected(_reason("The passkey could not be verified", exc)) from None
        now = utc(self.clock.now())
        if not await store.record_use(
            self.db, row, verified.new_sign_count, verified.credential_backed_up, now
        ):
            raise self._rejected("Another sign-in used this passkey at the same moment; try again.")
        async with self.db.session() as session:
            user = await session.get(User, row.user_id)
        if user is None:
            raise self._rejected("This passkey's account no longer exists.")
        return user

    # -- helpers ---------------------------------------------------------------------------------------

    def _added_notice(self, to: str, name: str, now: float) -> Mail:
        when = utc(now).strftime("%Y-%m-%d at %H:%M UTC")
        # The name is quoted: whoever added the passkey chose it (whitespace is collapsed, so one line).
        text = (
            f'A passkey named "{name}" was added to your account on {when}. '
            "If it was not you, remove it and reset your password.\n"
        )
        return Mail(to, f"A passkey was added to your {self.rp.name} account", text, kind="passkey_added")

    def _rejected(self, message: str) -> AuthFailed:
        return AuthFailed(message, code="passkey_rejected", headers=self._challenge)


def _party(rp: RelyingParty) -> dict[str, Any]:
    """What a ceremony's answer is checked against: the relying party it was started for."""
    return {"rp_id": rp.id, "origins": list(rp.origins)}


def _transports(credential: dict[str, Any]) -> list[str]:
    """The transports the browser reported, known values only (a hint for later sign-ins)."""
    response = credential.get("response")
    listed = response.get("transports") if isinstance(response, dict) else None
    if not isinstance(listed, list):
        return []
    return sorted({t for t in listed if isinstance(t, str) and t in transports()})


def _name(name: str) -> str:
    cleaned = " ".join(name.split())[:MAX_NAME_CHARS]
    if not cleaned:
        raise ValidationFailed("Give the passkey a name.", code="passkey_name_missing", param="name")
    return cleaned


def _reason(prefix: str, exc: Exception) -> str:
    detail = str(exc).strip()
    return f"{prefix}: {detail}"[:MAX_REASON_CHARS] if detail else f"{prefix}."
