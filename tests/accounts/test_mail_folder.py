"""The embedded default (no AGENTGATE_SMTP_URL): each message is an .eml file in data_dir/outbox and one
log line with its link, so ``make run`` needs no mail server."""

from __future__ import annotations

import email
import logging
import stat
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.mail.outbox import Mail
from agent_server.mail.tables import MAIL_PENDING, MAIL_SENT
from http_facade.app import create_app
from tests.accounts.smtp import body_of, link_in, mail_settings, outbox, settled
from tests.conftest import running

LINK = "http://127.0.0.1:8000/register/verify?token=tok_folder"
TEXT = f"Welcome.\n\nFinish here: {LINK}\n"


async def test_a_message_becomes_a_readable_eml_file_and_a_log_line_with_its_link(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentgate.mail")
    async with running(create_app(mail_settings(tmp_path))) as app:
        await app.state.accounts.mailer.send(Mail("ada@example.com", "Vérifiez", TEXT, "verify_email"))
        [row] = await settled(app)

    folder = tmp_path / "outbox"
    # no temporary file left behind
    assert sorted(p.name for p in folder.iterdir()) == [f"{row.id}.eml", f"{row.id}.txt"]
    path = folder / f"{row.id}.eml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the link in it is a credential
    raw = path.read_bytes()
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")  # RFC 5322 line ends
    message = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)
    assert message["From"] == "no-reply@127.0.0.1" and message["To"] == "ada@example.com"
    assert message["Subject"] == "Vérifiez" and message["Message-ID"] == f"<{row.id}@127.0.0.1>"
    assert message["Date"] is not None and body_of(message) == TEXT
    assert link_in(message, "/register/verify") == LINK
    assert row.status == MAIL_SENT and row.body_encrypted is None

    [line] = [r.getMessage() for r in caplog.records if "written to" in r.getMessage()]
    assert "ada@example.com" in line and "'Vérifiez'" in line and LINK in line and str(path) in line
    assert f"{row.id}.txt" in line


async def test_the_readable_copy_holds_every_link_whole(tmp_path: Path) -> None:
    """The .eml is quoted-printable: a link of a real mail is cut by soft line breaks and its '=' is
    written '=3D', so copied from there it fails. The .txt beside it has the link as sent."""
    link = "http://localhost:8000/app/register/verify?token=" + "T" * 43
    text = f"Welcome to agentgate, and to ä few more words.\n\n  {link}\n"
    async with running(create_app(mail_settings(tmp_path))) as app:
        await app.state.accounts.mailer.send(Mail("ada@example.com", "Confirm", text, "verify_email"))
        [row] = await settled(app)
    raw = (tmp_path / "outbox" / f"{row.id}.eml").read_text()
    assert link not in raw and "token=3D" in raw  # what a person copying from the .eml gets
    readable = tmp_path / "outbox" / f"{row.id}.txt"
    assert stat.S_IMODE(readable.stat().st_mode) == 0o600
    lines = readable.read_text().splitlines()
    assert lines[:4] == [
        "From: no-reply@127.0.0.1",
        "To: ada@example.com",
        "Subject: Confirm",
        f"Date: {lines[3].removeprefix('Date: ')}",
    ]
    assert f"  {link}" in lines and lines[-3] == "Welcome to agentgate, and to ä few more words."


async def test_mail_from_names_the_sender(tmp_path: Path) -> None:
    settings = mail_settings(tmp_path, mail_from="Acme accounts <accounts@acme.example>", mail_worker=False)
    async with running(create_app(settings)) as app:
        await app.state.accounts.mailer.send(Mail("ada@example.com", "Hi", "Hello\n", "invite"))
        assert await app.state.accounts.mailer.worker.tick() == 1
        [row] = await settled(app)
    message = email.message_from_bytes(
        (tmp_path / "outbox" / f"{row.id}.eml").read_bytes(), policy=policy.default
    )
    assert message["From"] == "Acme accounts <accounts@acme.example>"
    assert message["Message-ID"] == f"<{row.id}@acme.example>"


async def test_an_unwritable_folder_is_retried_not_lost(tmp_path: Path) -> None:
    blocker = tmp_path / "outbox"
    blocker.write_text("a file where the folder should be")
    clock = ManualClock()
    async with running(create_app(mail_settings(tmp_path, mail_worker=False), clock=clock)) as app:
        worker = app.state.accounts.mailer.worker
        await app.state.accounts.mailer.send(Mail("ada@example.com", "Hi", TEXT, "verify_email"))
        assert await worker.tick() == 1
        [row] = await outbox(app)
        assert row.status == MAIL_PENDING and (row.last_error or "").startswith(
            "cannot write to the outbox folder"
        )
        assert "tok_folder" not in (row.last_error or "")
        blocker.unlink()
        clock.advance(6)
        assert await worker.tick() == 1
        [row] = await outbox(app)
    assert row.status == MAIL_SENT and (blocker / f"{row.id}.eml").is_file()


async def test_outside_sandbox_mode_the_log_line_carries_no_link(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentgate.mail")
    settings = mail_settings(tmp_path).model_copy(update={"mode": "production"})
    async with running(create_app(settings)) as app:
        await app.state.accounts.mailer.send(Mail("ada@example.com", "Verify", TEXT, "verify_email"))
        await settled(app)
    assert "ada@example.com" in caplog.text and "tok_folder" not in caplog.text
    assert (
        "tok_folder" in (tmp_path / "outbox").joinpath(next((tmp_path / "outbox").iterdir()).name).read_text()
    )
