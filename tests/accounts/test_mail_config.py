"""AGENTGATE_SMTP_URL and AGENTGATE_MAIL_FROM are read when the app is built: a mistake stops the start
with a message that says what to fix and never repeats the password."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.foundation.errors import DeploymentError
from agent_server.mail.config import MailConfigError, parse_smtp_url
from http_facade.app import create_app
from tests.accounts.smtp import mail_settings

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    ("smtp_url", "expected"),
    [
        (f"smpt://user:{SECRET}@mail.example.com", "must start with smtp://, smtp+starttls:// or smtps://"),
        (f"mail.example.com:{SECRET}", "must start with smtp://"),
        (f"smtp://user:{SECRET}@", "names no host"),
        (f"smtp://user:{SECRET}@mail.example.com:99999", "not a valid URL"),
        (f"smtp://user:{SECRET}@mail.example.com:port", "not a valid URL"),
        ("smtp://user@mail.example.com", "needs both a user and a password"),
        (f"smtp://user:{SECRET}@mail.example.com/inbox", "takes no path"),
        (f"smtp://user:{SECRET}@mail.example.com?verify=no", "unknown options ['verify']"),
        (f"smtps://user:{SECRET}@mail.example.com?ca_file=/nonexistent/ca.pem", "is not a readable file"),
    ],
)
def test_a_malformed_smtp_url_stops_the_start(tmp_path: Path, smtp_url: str, expected: str) -> None:
    with pytest.raises(MailConfigError) as refused:
        create_app(mail_settings(tmp_path, smtp_url=smtp_url))
    assert expected in str(refused.value) and "AGENTGATE_SMTP_URL" in str(refused.value)
    assert SECRET not in str(refused.value)
    assert isinstance(refused.value, DeploymentError)  # the CLI reports these as configuration errors


def test_a_ca_file_that_is_no_certificate_stops_the_start(tmp_path: Path) -> None:
    junk = tmp_path / "ca.pem"
    junk.write_text("not a certificate")
    with pytest.raises(MailConfigError, match="holds no PEM certificate"):
        create_app(mail_settings(tmp_path, smtp_url=f"smtps://mail.example.com?ca_file={junk}"))


@pytest.mark.parametrize("mail_from", ["not an address", "a@example.com, b@example.com", "a@", "Name <>"])
def test_a_malformed_mail_from_stops_the_start(tmp_path: Path, mail_from: str) -> None:
    with pytest.raises(MailConfigError, match="AGENTGATE_MAIL_FROM"):
        create_app(mail_settings(tmp_path, mail_from=mail_from))


@pytest.mark.parametrize(
    ("smtp_url", "port", "start_tls", "use_tls"),
    [
        ("smtp://mail.example.com", 25, None, False),  # STARTTLS when the server offers it
        ("smtp+starttls://mail.example.com", 587, True, False),
        ("smtps://mail.example.com", 465, False, True),
        ("SMTPS://mail.example.com:2465", 2465, False, True),
    ],
)
def test_each_scheme_has_its_port_and_tls(
    smtp_url: str, port: int, start_tls: bool | None, use_tls: bool
) -> None:
    config = parse_smtp_url(smtp_url)
    assert (config.host, config.port, config.start_tls, config.use_tls) == (
        "mail.example.com",
        port,
        start_tls,
        use_tls,
    )
    assert config.username is None and config.password is None


def test_credentials_are_percent_decoded_and_kept_out_of_the_repr() -> None:
    config = parse_smtp_url("smtp+starttls://mailer%40acme.example:p%40ss%3Aw%2Frd@[::1]:2587")
    assert (config.username, config.password, config.host, config.port) == (
        "mailer@acme.example",
        "p@ss:w/rd",
        "::1",
        2587,
    )
    assert "p@ss" not in repr(config)
