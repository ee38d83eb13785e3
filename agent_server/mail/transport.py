"""What the worker hands a composed message to: an SMTP server, or a folder when none is configured."""

from __future__ import annotations

from email.message import EmailMessage
from typing import Protocol


class DeliveryFailed(Exception):
    """An attempt failed. ``permanent``: retrying cannot help (the server refused the recipient).
    ``reason`` is stored as the row's last_error, so it never holds the body or a credential."""

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.permanent = reason[:300], permanent


class Transport(Protocol):
    def describe(self) -> str:
        """Where mail goes, for the start-up log line (no credentials)."""
        ...

    async def deliver(self, mail_id: str, message: EmailMessage) -> None:
        """Hand ``message`` over or raise ``DeliveryFailed``."""
        ...
