"""Which e-mail addresses may hold anonymous keys: well-formed, on a domain that could receive mail,
and not on a disposable-mail service (docs/oauth.md, "Anonymous keys").

The syntax and the domain rules are email-validator's (RFC 5321/5322 and the special-use names such
as ``.test`` and ``.invalid``); no DNS is asked, so an answer never waits on a resolver. Disposable
domains come from the ``disposable-email-domains`` list, kept up to date by its community; a
subdomain of a listed domain counts as listed.
"""

from __future__ import annotations

import hashlib

from email_validator import EmailNotValidError, validate_email

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.lazy import lazy_module

# The list (~1.5 MB in memory) loads at the first address checked.
disposable = lazy_module("disposable_email_domains")


def digest(email: str) -> str:
    """How an address is kept: the SHA-256 of its lower-cased form."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def _disposable(domain: str) -> bool:
    labels = domain.split(".")
    return any(".".join(labels[i:]) in disposable.blocklist for i in range(len(labels) - 1))


def checked_address(raw: str) -> str:
    """The address, normalised and lower-cased; 400 ``invalid_email`` or ``disposable_email``."""
    try:
        email = validate_email(raw, check_deliverability=False).normalized.lower()
    except EmailNotValidError as exc:
        raise ValidationFailed(
            f"The e-mail address is not valid: {exc}", code="invalid_email", param="email"
        ) from None
    domain = email.rsplit("@", 1)[1]
    if _disposable(domain):
        raise ValidationFailed(
            f"Addresses at {domain} are disposable and cannot hold keys; use an address you keep.",
            code="disposable_email",
            param="email",
        )
    return email
