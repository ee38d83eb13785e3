"""The mail settings read once at start, so a malformed ``AGENTGATE_SMTP_URL`` or ``AGENTGATE_MAIL_FROM``
stops the app with a clear message instead of failing at the first send.

``AGENTGATE_SMTP_URL`` is one URL: ``smtp://`` (STARTTLS when the server offers it, port 25),
``smtp+starttls://`` (STARTTLS required, port 587) or ``smtps://`` (TLS from the first byte, port
465); user and password percent-encoded in the userinfo; ``?ca_file=/path`` trusts a private CA in
addition to the system's. Messages never repeat the URL: it may hold a password.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass, field
from email import errors, policy
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from agent_server.foundation.errors import DeploymentError
from agent_server.foundation.settings import Settings

SETTING = "AGENTGATE_SMTP_URL"
# scheme: (default port, start_tls as aiosmtplib takes it (None: when offered), implicit TLS)
SCHEMES: dict[str, tuple[int, bool | None, bool]] = {
    "smtp": (25, None, False),
    "smtp+starttls": (587, True, False),
    "smtps": (465, False, True),
}
QUERY_OPTIONS = ("ca_file",)


class MailConfigError(DeploymentError):
    """The mail settings cannot work; the message names the setting and what is wrong, never a secret."""


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    start_tls: bool | None
    use_tls: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls_context: ssl.SSLContext = field(default_factory=ssl.create_default_context, repr=False)

    @property
    def mode(self) -> str:
        if self.use_tls:
            return "implicit TLS"
        return "STARTTLS required" if self.start_tls else "STARTTLS when offered"


def parse_smtp_url(url: str) -> SmtpConfig:
    """Read ``AGENTGATE_SMTP_URL``; raises ``MailConfigError`` for anything it cannot use."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise MailConfigError(f"{SETTING} is not a valid URL (check the host and the port)") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise MailConfigError(f"{SETTING} must start with smtp://, smtp+starttls:// or smtps://")
    if not parts.hostname:
        raise MailConfigError(f"{SETTING} names no host (smtp://user:password@host:port)")
    if parts.path not in ("", "/") or parts.fragment:
        raise MailConfigError(f"{SETTING} takes no path: smtp://user:password@host:port?ca_file=/path")
    if (parts.username is None) != (parts.password is None):
        raise MailConfigError(f"{SETTING} needs both a user and a password, or neither")
    default_port, start_tls, use_tls = SCHEMES[scheme]
    return SmtpConfig(
        host=parts.hostname,
        port=port or default_port,
        start_tls=start_tls,
        use_tls=use_tls,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        tls_context=_tls_context(parts.query),
    )


def _tls_context(query: str) -> ssl.SSLContext:
    options = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(options) - set(QUERY_OPTIONS))
    if unknown:
        raise MailConfigError(f"{SETTING} has unknown options {unknown}; it accepts {list(QUERY_OPTIONS)}")
    if "ca_file" not in options:
        return _system_tls_context()
    [ca_file] = options["ca_file"][-1:]
    if not Path(ca_file).is_file():
        raise MailConfigError(f"{SETTING}: ca_file {ca_file!r} is not a readable file")
    context = ssl.create_default_context()  # verifies the certificate and the host name
    try:
        context.load_verify_locations(cafile=ca_file)
    except ssl.SSLError:
        raise MailConfigError(f"{SETTING}: ca_file {ca_file!r} holds no PEM certificate") from None
    return context


@cache  # loading the system's CA store costs ~10 ms an app; the context is only read after this
def _system_tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()  # verifies the certificate and the host name


def public_hostname(settings: Settings) -> str:
    return urlsplit(settings.public_base_url).hostname or "localhost"


def sender_address(settings: Settings) -> str:
    """The From header: ``AGENTGATE_MAIL_FROM`` (``Name <addr>`` or ``addr``), else no-reply@<public host>."""
    value = settings.mail_from or f"no-reply@{public_hostname(settings)}"
    try:
        header = policy.default.header_factory("From", value)
        [address] = header.addresses
        valid = bool(address.username and address.domain) and not header.defects
    except (errors.HeaderParseError, ValueError, IndexError):  # what the parser raises on nonsense
        valid = False
    if not valid:
        raise MailConfigError(f"AGENTGATE_MAIL_FROM {value!r} is not one address like 'Name <no-reply@host>'")
    return value


def ehlo_name(settings: Settings) -> str:
    """How the service introduces itself to the SMTP server: its public host (an IP as an address literal)."""
    host = public_hostname(settings)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return f"[IPv6:{host}]" if address.version == 6 else f"[{host}]"
