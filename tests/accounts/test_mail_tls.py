"""TLS and AUTH against a real SMTP server with a certificate made in the test: STARTTLS, implicit TLS,
credentials from the URL, and the refusals that keep a password off the wire or out of the database."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from agent_server.mail.outbox import Mail
from agent_server.mail.tables import MAIL_PENDING, MAIL_SENT
from http_facade.app import create_app
from tests.accounts.smtp import (
    Certificates,
    SmtpServer,
    link_in,
    mail_settings,
    make_certificates,
    outbox,
    settled,
)
from tests.conftest import running

# aiosmtpd warns whenever AUTH does not wait for STARTTLS: with implicit TLS it needs not, and the
# server without TLS is there to show that the client keeps its password to itself.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")
USER, PASSWORD = "mailer@agentgate", "p@ss:w/rd%20 ü"  # every character the userinfo must percent-encode
LINK = "http://127.0.0.1:8000/register/verify?token=tok_tls"
MAIL = Mail(to="ada@example.com", subject="Verify", text=f"Follow {LINK}\n", kind="verify_email")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


def url(scheme: str, server: SmtpServer, ca_file: Path | None, password: str = PASSWORD) -> str:
    options = f"?ca_file={quote(str(ca_file))}" if ca_file else ""
    return f"{scheme}://{quote(USER, safe='')}:{quote(password, safe='')}@127.0.0.1:{server.port}{options}"


async def send_and_settle(settings_dir: Path, smtp_url: str) -> tuple[str, str | None]:
    """Queue one message with the worker running; the row's final status and last error."""
    async with running(create_app(mail_settings(settings_dir, smtp_url=smtp_url))) as app:
        await app.state.accounts.mailer.send(MAIL)
        [row] = await settled(app)
    return row.status, row.last_error


@pytest.mark.parametrize("scheme", ["smtp+starttls", "smtp"])
async def test_starttls_with_a_private_ca_and_auth_from_the_url(
    tmp_path: Path, certificates: Certificates, scheme: str
) -> None:
    """smtp+starttls:// requires STARTTLS; smtp:// takes it because the server offers it."""
    server = SmtpServer(tls=certificates.server_context, require_starttls=True, credentials=(USER, PASSWORD))
    with server:
        assert await send_and_settle(tmp_path, url(scheme, server, certificates.ca_file)) == (MAIL_SENT, None)
    [envelope] = server.envelopes
    assert envelope.tls and envelope.login == USER
    assert link_in(server.messages[0], "/register/verify") == LINK


async def test_implicit_tls_with_auth_from_the_url(tmp_path: Path, certificates: Certificates) -> None:
    server = SmtpServer(tls=certificates.server_context, implicit_tls=True, credentials=(USER, PASSWORD))
    with server:
        assert await send_and_settle(tmp_path, url("smtps", server, certificates.ca_file)) == (
            MAIL_SENT,
            None,
        )
    [envelope] = server.envelopes
    assert envelope.tls and envelope.login == USER and server.messages[0]["To"] == "ada@example.com"


async def test_a_certificate_from_an_unknown_ca_is_refused(
    tmp_path: Path, certificates: Certificates
) -> None:
    server = SmtpServer(tls=certificates.server_context, implicit_tls=True, credentials=(USER, PASSWORD))
    with server:
        async with running(
            create_app(mail_settings(tmp_path, smtp_url=url("smtps", server, None), mail_worker=False))
        ) as app:
            await app.state.accounts.mailer.send(MAIL)
            assert await app.state.accounts.mailer.worker.tick() == 1
            [row] = await outbox(app)
    assert server.messages == [] and row.status == MAIL_PENDING  # fixable by the operator: retried
    assert "CERTIFICATE_VERIFY_FAILED" in (row.last_error or "")


async def test_credentials_are_never_sent_without_tls(tmp_path: Path) -> None:
    """smtp:// to a server that offers no STARTTLS: the message waits rather than expose the password."""
    server = SmtpServer(credentials=(USER, PASSWORD))
    with server:
        async with running(
            create_app(mail_settings(tmp_path, smtp_url=url("smtp", server, None), mail_worker=False))
        ) as app:
            await app.state.accounts.mailer.send(MAIL)
            assert await app.state.accounts.mailer.worker.tick() == 1
            [row] = await outbox(app)
    assert server.messages == [] and row.status == MAIL_PENDING
    assert row.last_error == "the server offered no STARTTLS; credentials are only sent over TLS"


async def test_a_wrong_password_is_retried_and_never_stored(
    tmp_path: Path, certificates: Certificates
) -> None:
    server = SmtpServer(tls=certificates.server_context, require_starttls=True, credentials=(USER, PASSWORD))
    wrong = "hunter2-wrong"
    with server:
        smtp_url = url("smtp+starttls", server, certificates.ca_file, password=wrong)
        async with running(create_app(mail_settings(tmp_path, smtp_url=smtp_url, mail_worker=False))) as app:
            await app.state.accounts.mailer.send(MAIL)
            assert await app.state.accounts.mailer.worker.tick() == 1
            [row] = await outbox(app)
    assert server.messages == [] and row.status == MAIL_PENDING
    assert (row.last_error or "").startswith("SMTPAuthenticationError: 535")
    assert wrong not in (row.last_error or "") and "tok_tls" not in (row.last_error or "")
