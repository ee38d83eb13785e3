"""The embedded default (no ``AGENTGATE_SMTP_URL``): each message becomes ``<data_dir>/outbox/<id>.eml``
with ``<id>.txt`` beside it, and one log line names the recipient, the subject, the files and (in
sandbox mode) the links, so ``make run`` needs no mail server. This is the only place where a link
from a message may reach a log.

The ``.eml`` is the message as it would go on the wire: quoted-printable, so a long link is cut by soft
line breaks (``=``) and its ``=`` reads ``=3D``; copied from there it fails. The ``.txt`` is the same
message as a person reads it (From, To, Subject, Date, then the text), with every link whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from email.message import EmailMessage
from pathlib import Path

from agent_server.mail.message import links_in
from agent_server.mail.transport import DeliveryFailed

log = logging.getLogger("agentgate.mail")


class FolderTransport:
    def __init__(self, folder: Path, *, log_links: bool = True) -> None:
        # Links go to the log in sandbox mode only: a production log must not hold working links.
        self.folder, self.log_links = folder, log_links

    def describe(self) -> str:
        return f"the folder {self.folder} (no AGENTGATE_SMTP_URL)"

    async def deliver(self, mail_id: str, message: EmailMessage) -> None:
        try:
            # The readable copy first: once the .eml exists, the message counts as delivered.
            await asyncio.to_thread(self._write, f"{mail_id}.txt", readable(message).encode())
            path = await asyncio.to_thread(self._write, f"{mail_id}.eml", message.as_bytes())
        except OSError as exc:
            raise DeliveryFailed(
                f"cannot write to the outbox folder: {exc.strerror or type(exc).__name__}"
            ) from exc
        links = links_in(message.get_content()) if self.log_links else ["(not logged outside sandbox mode)"]
        log.info(
            "mail to %s, subject %r, written to %s (readable: %s); links: %s",
            message["To"],
            str(message["Subject"]),
            path,
            path.with_suffix(".txt").name,
            " ".join(links) or "none",
        )

    def _write(self, name: str, data: bytes) -> Path:
        """Write to a hidden temporary file, then rename: a reader never sees half a file."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self.folder / name
        descriptor, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=self.folder)  # mode 0600
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return target


def readable(message: EmailMessage) -> str:
    """The message as plain text: its headers a person reads, a blank line, the text as written."""
    headers = "".join(
        f"{name}: {message[name]}\n" for name in ("From", "To", "Subject", "Date") if message[name]
    )
    return f"{headers}\n{message.get_content()}"
