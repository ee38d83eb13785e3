"""Queued mail reaches a real SMTP server: headers and body, a server outage, a restart, refusals, giving up."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.mail.outbox import Mail
from agent_server.mail.tables import MAIL_FAILED, MAIL_PENDING, MAIL_SENT
from http_facade.app import create_app
from tests.accounts.smtp import SmtpServer, body_of, link_in, mail_settings, outbox, settled
from tests.conftest import running

LINK = "http://127.0.0.1:8000/register/verify?token=tok_5ecret0ne"
TEXT = f"Héllo Ada,\n\nconfirm your address within an hour:\n{LINK}\n\n— agentgate\n"
VERIFY = Mail(to="ada@example.com", subject="Vérifiez your address", text=TEXT, kind="verify_email")


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


async def test_a_queued_message_arrives_with_its_headers_and_body_and_is_erased_at_rest(
    tmp_path: Path, smtp: SmtpServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A poll of a minute: only the in-process nudge after queueing can deliver it within the wait.
    settings = mail_settings(tmp_path, smtp_url=smtp.url, mail_poll_seconds=60)
    caplog.set_level(logging.DEBUG)
    async with running(create_app(settings)) as app:
        await app.state.accounts.mailer.send(VERIFY)
        message = await smtp.wait_for("ada@example.com", timeout=5)
        [row] = await settled(app)

    assert message["From"] == "no-reply@127.0.0.1"
    assert message["To"] == "ada@example.com" and message["Subject"] == "Vérifiez your address"
    assert message["Message-ID"] == f"<{row.id}@127.0.0.1>"
    assert (
        abs(
            parsedate_to_datetime(message["Date"]).timestamp()
            - row.created_at.replace(tzinfo=UTC).timestamp()
        )
        < 1
    )
    assert message.get_content_type() == "text/plain" and message.get_content_charset() == "utf-8"
    assert body_of(message) == TEXT
    assert link_in(message, "/register/verify") == LINK
    [envelope] = smtp.envelopes
    assert envelope.mail_from == "no-reply@127.0.0.1" and envelope.rcpt_tos == ["ada@example.com"]
    assert not envelope.tls and envelope.login is None  # this server offers neither

    assert row.status == MAIL_SENT and row.attempts == 1 and row.sent_at is not None
    assert row.body_encrypted is None and row.last_error is None and row.lease_owner is None
    ours = [record.getMessage() for record in caplog.records if record.name.startswith("agentgate")]
    assert any(row.id in line for line in ours)  # the send is logged ...
    assert not any(
        "tok_5ecret0ne" in line for line in ours
    )  # ... without the link (only folder mode logs it)


async def test_the_server_down_at_queue_time_gets_the_message_once_it_is_back(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    clock = ManualClock()
    settings = mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False)
    async with running(create_app(settings, clock=clock)) as app:
        worker = app.state.accounts.mailer.worker
        smtp.stop()
        await app.state.accounts.mailer.send(VERIFY)
        assert await worker.tick() == 1  # attempt 1: connection refused
        [row] = await outbox(app)
        assert row.status == MAIL_PENDING and row.attempts == 1 and row.body_encrypted is not None
        assert "SMTPConnect" in (row.last_error or "") and "tok_" not in (row.last_error or "")
        assert 4.5 <= (row.next_attempt_at.timestamp() - clock.now()) <= 5.5  # 5 s +- 10 %
        assert await worker.tick() == 0  # not due: the backoff runs on the clock, not the wall

        smtp.start()  # back, on the same port
        clock.advance(6)
        assert await worker.tick() == 1
        [row] = await outbox(app)
    assert row.status == MAIL_SENT and row.attempts == 2 and row.body_encrypted is None
    assert [m["To"] for m in smtp.messages] == ["ada@example.com"]


async def test_nothing_is_lost_across_a_restart(tmp_path: Path, smtp: SmtpServer) -> None:
    """Queued by an app whose worker is off; sent by the next app on the same data dir."""
    async with running(create_app(mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False))) as first:
        await first.state.accounts.mailer.send(VERIFY)
    assert smtp.messages == []

    async with running(create_app(mail_settings(tmp_path, smtp_url=smtp.url))) as second:
        message = await smtp.wait_for("ada@example.com", timeout=5)
        [row] = await settled(second)
    assert link_in(message, "/register/verify") == LINK and row.status == MAIL_SENT


async def test_a_permanent_refusal_fails_at_once_and_is_never_retried(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    clock = ManualClock()
    smtp.refuse("ada@example.com", "550 5.1.1 <ada@example.com>: mailbox unavailable")
    async with running(
        create_app(mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False), clock=clock)
    ) as app:
        worker = app.state.accounts.mailer.worker
        await app.state.accounts.mailer.send(VERIFY)
        assert await worker.tick() == 1
        for _ in range(5):  # hours go by: nothing is attempted again
            clock.advance(3600)
            assert await worker.tick() == 0
        [row] = await outbox(app)
    assert smtp.rcpt_attempts == ["ada@example.com"] and smtp.messages == []
    assert row.status == MAIL_FAILED and row.attempts == 1 and row.body_encrypted is None
    assert row.last_error == "recipient refused: 550 5.1.1 <ada@example.com>: mailbox unavailable"


async def test_a_temporary_refusal_is_retried_and_then_delivered(tmp_path: Path, smtp: SmtpServer) -> None:
    clock = ManualClock()
    smtp.refuse("ada@example.com", "451 4.3.0 Try again later")
    async with running(
        create_app(mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False), clock=clock)
    ) as app:
        worker = app.state.accounts.mailer.worker
        await app.state.accounts.mailer.send(VERIFY)
        assert await worker.tick() == 1
        [row] = await outbox(app)
        assert row.status == MAIL_PENDING and row.last_error == "recipient refused: 451 4.3.0 Try again later"
        smtp.accept("ada@example.com")  # the mailbox is back
        clock.advance(6)
        assert await worker.tick() == 1
        [row] = await outbox(app)
    assert row.status == MAIL_SENT and row.attempts == 2 and len(smtp.messages) == 1


async def test_a_message_is_given_up_after_the_retry_window(tmp_path: Path, smtp: SmtpServer) -> None:
    clock = ManualClock()
    settings = mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False, mail_retry_hours=0.005)  # 18 s
    smtp.stop()
    async with running(create_app(settings, clock=clock)) as app:
        worker = app.state.accounts.mailer.worker
        await app.state.accounts.mailer.send(VERIFY)
        assert await worker.tick() == 1  # next attempt after ~5 s: inside the window
        clock.advance(6)
        assert await worker.tick() == 1  # the next one (~30 s) would fall outside: given up
        clock.advance(3600)
        assert await worker.tick() == 0
        [row] = await outbox(app)
    assert row.status == MAIL_FAILED and row.attempts == 2 and row.body_encrypted is None
    assert "SMTPConnect" in (row.last_error or "")


async def test_an_address_that_is_not_one_recipient_fails_without_reaching_the_server(
    tmp_path: Path, smtp: SmtpServer
) -> None:
    """A list or a header injection in the address must never turn into extra recipients."""
    async with running(create_app(mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False))) as app:
        mailer = app.state.accounts.mailer
        for to in (
            "ada@example.com, eve@example.com",
            "ada@example.com\r\nBcc: eve@example.com",
            "no address",
        ):
            await mailer.send(Mail(to=to, subject="Hi", text="x", kind="verify_email"))
        assert await mailer.worker.tick() == 3
        rows = await outbox(app)
    assert smtp.rcpt_attempts == []
    assert {row.status for row in rows} == {MAIL_FAILED}
    assert all((row.last_error or "").startswith("cannot be written as a message") for row in rows)
