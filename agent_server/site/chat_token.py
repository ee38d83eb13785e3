"""Ephemeral chat tokens (spec 3.3, 5.8): signed, bound to IP and User-Agent, 3 s to 1 h old.

Format: ``base64url(payload) "." base64url(HMAC-SHA-256(secret, payload))``. The payload holds the
issue time and keyed hashes of the client IP and User-Agent, so it reveals neither and the server
keeps no state: any process with the same secret verifies it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
from fnmatch import fnmatchcase
from pathlib import Path

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AuthFailed, ExpiredToken, PermissionDenied
from agent_server.foundation.secret_files import load_or_create
from agent_server.foundation.settings import Settings

SECRET_FILE = "chat_token.secret"


def load_or_create_secret(data_dir: Path) -> bytes:
    """A random secret kept in data_dir, so every worker on this host agrees on it."""
    return load_or_create(data_dir, SECRET_FILE, lambda: secrets.token_hex(32).encode())


def origin_allowed(origin: str, settings: Settings) -> bool:
    """Origin patterns from settings (``http://localhost:*``) plus the public origin itself."""
    public = settings.public_base_url.rstrip("/")
    public_origin = public.split("/", 3)[0] + "//" + settings.public_host
    return origin == public_origin or any(fnmatchcase(origin, p) for p in settings.allowed_origins)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ChatTokens:
    def __init__(self, secret: bytes, clock: Clock, *, ttl: int, min_age: float) -> None:
        self.secret, self.clock, self.ttl, self.min_age = secret, clock, ttl, min_age

    def _bind(self, kind: str, value: str) -> str:
        return hmac.new(self.secret, f"{kind}\n{value}".encode(), hashlib.sha256).hexdigest()[:24]

    def _sign(self, payload: bytes) -> str:
        return _b64(hmac.new(self.secret, payload, hashlib.sha256).digest())

    def issue(self, ip: str, user_agent: str) -> str:
        body = {
            # Milliseconds: whole seconds would let a token through up to a second before its 3 s.
            "iat": round(self.clock.now(), 3),
            "ip": self._bind("ip", ip),
            "ua": self._bind("ua", user_agent),
            "n": secrets.token_hex(6),
        }
        payload = json.dumps(body, separators=(",", ":")).encode()
        return f"{_b64(payload)}.{self._sign(payload)}"

    def verify(self, token: str, ip: str, user_agent: str) -> None:
        """Raise 401 naming the problem: invalid, expired, too young, other IP, other User-Agent."""
        try:
            encoded, signature = token.split(".")
            payload = _unb64(encoded)
            valid = hmac.compare_digest(signature, self._sign(payload))
            body = json.loads(payload) if valid else None
            issued = float(body["iat"]) if body else 0.0
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid or not isinstance(body, dict):
            raise AuthFailed(
                "The chat token is invalid (bad format or signature); fetch a new one.", code="invalid_token"
            )
        age = self.clock.now() - issued
        if age >= self.ttl:
            raise ExpiredToken(f"The chat token expired (tokens live {self.ttl} s); fetch a new one.")
        if age < self.min_age:
            wait = max(1, math.ceil(self.min_age - age))
            raise AuthFailed(
                f"The chat token is too young: tokens are usable {self.min_age:g} s after issue; retry in {wait} s.",
                code="token_too_young",
                retry_after=wait,
            )
        if not hmac.compare_digest(str(body.get("ip")), self._bind("ip", ip)):
            raise AuthFailed(
                "The chat token was issued to another client IP; fetch a new one.", code="token_ip_mismatch"
            )
        if not hmac.compare_digest(str(body.get("ua")), self._bind("ua", user_agent)):
            raise AuthFailed(
                "The chat token was issued to another User-Agent; fetch a new one.", code="token_ua_mismatch"
            )


def check_origin(origin: str | None, settings: Settings, fetch_site: str | None = None) -> None:
    """Refuse a token request that is not from an allowed origin.

    A browser sends no Origin on a same-origin GET, but it does send ``Sec-Fetch-Site``, a header no
    page can set: ``same-origin`` means the request comes from this service's own pages, so it counts
    as the public origin. An Origin, when present, is always what is checked.
    """
    if not origin and fetch_site == "same-origin":
        return
    if not origin:
        raise PermissionDenied(
            "Send an Origin header to get a chat token (the site's own pages do so).", code="origin_required"
        )
    if not origin_allowed(origin, settings):
        raise PermissionDenied(f"Origin {origin} may not use the chat proxy.", code="origin_not_allowed")
