"""A software WebAuthn authenticator and client: what a browser and a platform authenticator send.

It builds the bytes exactly as the WebAuthn Level 3 specification lays them out, with its own ES256
key (``cryptography``) and CBOR (``cbor2``), and never uses the server's library, so the server's
checks meet real, independently made attestations and assertions:

- authenticator data: SHA-256(rpId) | flags (UP, UV, BE, BS, AT) | counter (big-endian uint32)
  | for creation: AAGUID | credential id length | credential id | COSE_Key of the public key;
- attestation object: CBOR ``{"fmt": "none", "attStmt": {}, "authData": ...}``;
- clientDataJSON: ``{"type", "challenge", "origin", "crossOrigin"}``;
- assertion signature: ECDSA P-256 over authenticatorData | SHA-256(clientDataJSON), DER encoded.

Tests may lie on purpose: another origin or RP id, a counter that goes backwards, no UV flag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

UP, UV, BE, BS, AT = 0x01, 0x04, 0x08, 0x10, 0x40
AAGUID = bytes.fromhex("0102030405060708090a0b0c0d0e0f10")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cose_es256(key: ec.EllipticCurvePublicKey) -> bytes:
    """RFC 9053 EC2 key: kty 2, alg -7 (ES256), crv 1 (P-256), x and y of 32 bytes each."""
    numbers = key.public_numbers()
    return cbor2.dumps(
        {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
    )


@dataclass
class Credential:
    """A resident credential kept by the authenticator."""

    id: bytes
    rp_id: str
    user_handle: bytes
    key: ec.EllipticCurvePrivateKey
    counter: int = 0


@dataclass
class SoftAuthenticator:
    """Creates and uses ES256 passkeys for the origin a test names (default: the app's)."""

    origin: str
    backup_eligible: bool = True
    backed_up: bool = True
    # What the browser reports in response.transports at creation (a platform passkey by default).
    transports: list[str] = field(default_factory=lambda: ["hybrid", "internal"])
    credentials: list[Credential] = field(default_factory=list)

    def flags(self, *extra: int, verified: bool = True) -> int:
        bits = UP | (UV if verified else 0) | (BE if self.backup_eligible else 0)
        bits |= BS if self.backed_up else 0
        for bit in extra:
            bits |= bit
        return bits

    def create(self, options: dict[str, Any], *, origin: str | None = None, rp_id: str | None = None) -> dict:
        """``navigator.credentials.create()`` for JSON ``options``: the credential's JSON form."""
        rp_id = rp_id or options["rp"]["id"]
        excluded = {entry["id"] for entry in options.get("excludeCredentials", [])}
        assert not any(b64url(c.id) in excluded for c in self.credentials if c.rp_id == rp_id), "excluded"
        credential = Credential(secrets.token_bytes(32), rp_id, unb64url(options["user"]["id"]), self.key())
        self.credentials.append(credential)
        attested = AAGUID + len(credential.id).to_bytes(2, "big") + credential.id
        attested += cose_es256(credential.key.public_key())
        auth_data = self.auth_data(rp_id, self.flags(AT), 0) + attested
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        client_data = self.client_data("webauthn.create", options["challenge"], origin)
        return {
            "id": b64url(credential.id),
            "rawId": b64url(credential.id),
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation),
                "transports": list(self.transports),
            },
        }

    def get(
        self,
        options: dict[str, Any],
        *,
        origin: str | None = None,
        rp_id: str | None = None,
        counter: int | None = None,
        credential: Credential | None = None,
        verified: bool = True,
        user_handle: bytes | None = None,
    ) -> dict:
        """``navigator.credentials.get()``: an assertion by the first allowed (or any resident) credential."""
        rp_id = rp_id or options["rpId"]
        credential = credential or self.pick(options, rp_id)
        credential.counter = credential.counter + 1 if counter is None else counter
        auth_data = self.auth_data(rp_id, self.flags(verified=verified), credential.counter)
        client_data = self.client_data("webauthn.get", options["challenge"], origin)
        signed = auth_data + hashlib.sha256(client_data).digest()
        signature = credential.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        handle = credential.user_handle if user_handle is None else user_handle
        return {
            "id": b64url(credential.id),
            "rawId": b64url(credential.id),
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": b64url(handle),
            },
        }

    def pick(self, options: dict[str, Any], rp_id: str) -> Credential:
        allowed = {entry["id"] for entry in options.get("allowCredentials", [])}
        for credential in self.credentials:
            if credential.rp_id == rp_id and (not allowed or b64url(credential.id) in allowed):
                return credential
        raise LookupError("no credential of this authenticator is allowed")

    def client_data(self, kind: str, challenge: str, origin: str | None) -> bytes:
        body = {"type": kind, "challenge": challenge, "origin": origin or self.origin, "crossOrigin": False}
        return json.dumps(body, separators=(",", ":")).encode()

    @staticmethod
    def auth_data(rp_id: str, flags: int, counter: int) -> bytes:
        return hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + counter.to_bytes(4, "big")

    @staticmethod
    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())
