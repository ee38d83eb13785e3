"""Several workers on one outbox: racing on PostgreSQL, every message goes out once; a dead process's lease runs out."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from cryptography.fernet import Fernet

from agent_server.foundation.clock import ManualClock
from agent_server.mail.outbox import Mail
from agent_server.mail.tables import MAIL_SENT
from http_facade.app import create_app
from tests.accounts.smtp import SmtpServer, mail_settings, outbox
from tests.conftest import running

MESSAGES = 24


async def test_two_workers_racing_on_postgres_send_each_message_exactly_once(
    tmp_path: Path, postgres_url: str
) -> None:
    clock = ManualClock()
    # Both processes share the database and the key that encrypts bodies, as a deployment must.
    shared = {
        "database_url": postgres_url,
        "mail_worker": False,
        "encryption_key": Fernet.generate_key().decode(),
    }
    with SmtpServer() as smtp:
        # Two apps as two processes would be: their own engine, worker and lease owner.
        first = create_app(mail_settings(tmp_path / "a", smtp_url=smtp.url, **shared), clock=clock)
        second = create_app(mail_settings(tmp_path / "b", smtp_url=smtp.url, **shared), clock=clock)
        async with running(first), running(second):
            for number in range(MESSAGES):
                await first.state.accounts.mailer.send(Mail(f"user{number}@example.com", "Hi", "x", "invite"))
            workers = (first.state.accounts.mailer.worker, second.state.accounts.mailer.worker)
            rounds = []
            while True:
                counts = await asyncio.gather(*(worker.tick() for worker in workers for _ in range(2)))
                rounds.append(counts)
                if not any(counts):
                    break
            rows = await outbox(first)

    received = Counter(address for envelope in smtp.envelopes for address in envelope.rcpt_tos)
    assert len(received) == MESSAGES and set(received.values()) == {1}, received
    assert sum(map(sum, rounds)) == MESSAGES  # no message was attempted twice
    assert {row.status for row in rows} == {MAIL_SENT} and {row.attempts for row in rows} == {1}


async def test_a_message_held_by_a_dead_process_is_sent_by_another_after_its_lease(tmp_path: Path) -> None:
    clock = ManualClock()
    with SmtpServer() as smtp:
        settings = mail_settings(tmp_path, smtp_url=smtp.url, mail_worker=False)
        first, second = create_app(settings, clock=clock), create_app(settings, clock=clock)  # one data dir
        async with running(first), running(second):
            await first.state.accounts.mailer.send(Mail("ada@example.com", "Hi", "x", "invite"))
            dead = first.state.accounts.mailer.worker
            assert len(await dead._claim()) == 1  # claimed, then the process died before sending
            survivor = second.state.accounts.mailer.worker
            assert await survivor.tick() == 0  # leased: nobody else sends it meanwhile
            clock.advance(survivor.lease_seconds - 1)
            assert await survivor.tick() == 0
            clock.advance(2)
            assert await survivor.tick() == 1
            [row] = await outbox(second)
    assert [envelope.rcpt_tos for envelope in smtp.envelopes] == [["ada@example.com"]]
    assert row.status == MAIL_SENT and row.attempts == 1 and row.lease_owner is None
