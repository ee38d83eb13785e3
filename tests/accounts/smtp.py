"""A real SMTP server (aiosmtpd) on a free loopback port, for every test that reads mail.

    with SmtpServer() as smtp:                      # plain SMTP, no TLS, no AUTH
        settings = Settings(..., smtp_url=smtp.url)
        ...
        message = await smtp.wait_for("ada@example.com")
        link = link_in(message, "/register/verify")  # the first link whose path starts so

``SmtpServer(tls=certificates.server_context)`` offers STARTTLS (``require_starttls=True`` insists on
it), ``implicit_tls=True`` speaks TLS from the first byte, ``credentials=("user", "pass")`` requires
AUTH. ``stop()`` and ``start()`` take the server down and bring it back on the same port;
``refuse(address, "550 ...")`` answers RCPT for that address with the given reply.
``make_certificates(folder)`` makes a private CA and a server certificate for 127.0.0.1; ``mail_settings``,
``outbox`` and ``settled`` are what the mail tests share about the app and its stored outbox.
"""

from __future__ import annotations

import asyncio
import datetime
import email
import ipaddress
import ssl
import time
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi import FastAPI
from sqlalchemy import select

from agent_server.foundation.settings import Settings
from agent_server.mail.message import links_in
from agent_server.mail.tables import MAIL_PENDING, OutboxMail
from tests.conftest import BASE_URL, free_port


@dataclass(frozen=True)
class Envelope:
    """How one message arrived: the SMTP envelope and the session it came in."""

    mail_from: str
    rcpt_tos: list[str]
    tls: bool
    login: str | None


class SmtpServer:
    def __init__(
        self,
        *,
        port: int | None = None,
        tls: ssl.SSLContext | None = None,
        require_starttls: bool = False,
        implicit_tls: bool = False,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        self.port = port or free_port()
        self.tls, self.require_starttls, self.implicit_tls = tls, require_starttls, implicit_tls
        self.credentials = credentials
        self.messages: list[EmailMessage] = []
        self.envelopes: list[Envelope] = []
        self.rcpt_attempts: list[str] = []  # every RCPT TO, accepted or refused
        self._refusals: dict[str, str] = {}
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        """The server's URL without credentials or options (``smtps://`` for implicit TLS)."""
        return f"{'smtps' if self.implicit_tls else 'smtp'}://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen (again) on the same port."""
        options: dict[str, Any] = {"server_hostname": "mail.test"}
        if self.implicit_tls:
            options["ssl_context"] = self.tls
        elif self.tls is not None:
            options.update(tls_context=self.tls, require_starttls=self.require_starttls)
        if self.credentials is not None:
            # AUTH only after STARTTLS where STARTTLS is offered, as on a real submission port.
            after_starttls = self.tls is not None and not self.implicit_tls
            options.update(
                authenticator=self._authenticate, auth_required=True, auth_require_tls=after_starttls
            )
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port, **options)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> SmtpServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def refuse(self, address: str, reply: str = "550 5.1.1 Mailbox unavailable") -> None:
        self._refusals[address.lower()] = reply

    def accept(self, address: str) -> None:
        self._refusals.pop(address.lower(), None)

    async def wait_for(self, to: str, timeout: float = 5.0) -> EmailMessage:
        """The first message received for ``to``, waiting up to ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        while True:
            for message in list(self.messages):
                if any(a.addr_spec.lower() == to.lower() for a in message["To"].addresses):
                    return message
            if time.monotonic() > deadline:
                raise AssertionError(f"no mail for {to} within {timeout} s; got {len(self.messages)} others")
            await asyncio.sleep(0.02)

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        given = (
            (auth_data.login.decode(), auth_data.password.decode())
            if isinstance(auth_data, LoginPassword)
            else None
        )
        ok = given == self.credentials
        return AuthResult(success=ok, handled=False, auth_data=auth_data)  # a failure answers 535


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        self.server.rcpt_attempts.append(address)
        refusal = self.server._refusals.get(address.lower())
        if refusal:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None
        # session.ssl is set by STARTTLS; with implicit TLS the connection itself carries the context.
        tls = session.ssl is not None or server.transport.get_extra_info("sslcontext") is not None
        self.server.envelopes.append(Envelope(envelope.mail_from, list(envelope.rcpt_tos), tls, login))
        message = email.message_from_bytes(envelope.original_content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        self.server.messages.append(message)
        return "250 Message accepted for delivery"


def body_of(message: EmailMessage) -> str:
    """The decoded text/plain body, with the line ends it had before it went on the wire."""
    part = message.get_body(("plain",))
    assert part is not None, "the message has no text/plain part"
    return part.get_content().replace("\r\n", "\n")  # the wire's line ends, as the text was written


def link_in(message: EmailMessage, path_prefix: str) -> str:
    """The first link in the message whose path (or whole URL) starts with ``path_prefix``."""
    links = links_in(body_of(message))
    for link in links:
        if urlsplit(link).path.startswith(path_prefix) or link.startswith(path_prefix):
            return link
    raise AssertionError(f"no link starting with {path_prefix!r} in the message; links: {links}")


@dataclass(frozen=True)
class Certificates:
    """A private CA (``ca_file``, for ``?ca_file=``) and a server certificate it signed for 127.0.0.1."""

    ca_file: Path
    server_context: ssl.SSLContext


def make_certificates(folder: Path) -> Certificates:
    now = datetime.datetime.now(datetime.UTC)
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agentgate test CA")])
    ca_usage = x509.KeyUsage(True, False, False, False, False, True, True, False, False)  # sign certs, CRLs
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    server = (
        _builder(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]),
            ca_name,
            server_key.public_key(),
            now,
        )
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return Certificates(ca_file, context)


def _builder(
    subject: x509.Name, issuer: x509.Name, key: Any, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


# What the mail tests share besides the server: settings of an app, and the outbox as stored.


def mail_settings(data_dir: Path, **changes: Any) -> Settings:
    """Settings of an app on ``data_dir`` (SQLite, no Redis unless ``changes`` say otherwise)."""
    defaults: dict[str, Any] = {"public_base_url": BASE_URL, "redis_url": None, "database_url": None}
    return Settings(data_dir=data_dir, **{**defaults, **changes})


async def outbox(app: FastAPI) -> list[OutboxMail]:
    """Every row of the app's mail outbox, oldest first."""
    async with app.state.services.db.session() as session:
        rows = await session.execute(select(OutboxMail).order_by(OutboxMail.created_at, OutboxMail.id))
        return list(rows.scalars())


async def settled(app: FastAPI, timeout: float = 5.0) -> list[OutboxMail]:
    """The outbox once no row is pending any more (the worker records a send just after the server has it)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = await outbox(app)
        if all(row.status != MAIL_PENDING for row in rows):
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"mail still pending after {timeout} s: {[row.last_error for row in rows]}")
        await asyncio.sleep(0.02)
