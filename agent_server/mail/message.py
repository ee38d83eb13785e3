"""One outbox row as an RFC 5322 message: the same bytes go to the SMTP server or into a .eml file."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email import errors, policy
from email.message import EmailMessage
from email.utils import format_datetime

# CRLF line ends as on the wire; 7bit makes non-ASCII text quoted-printable, so no server has to
# support 8BITMIME.
WIRE_POLICY = policy.SMTP.clone(cte_type="7bit")
LINK = re.compile(r"https?://[^\s<>\"']+")


def compose(
    *, mail_id: str, sender: str, to: str, subject: str, text: str, created_at: datetime
) -> EmailMessage:
    """A text/plain UTF-8 message; ``ValueError`` for a header that cannot be written (a line break in it)."""
    message = EmailMessage(policy=WIRE_POLICY)
    message["From"] = sender
    try:
        message["To"] = to
        valid = len(message["To"].addresses) == 1 and not message["To"].defects
    except (errors.HeaderParseError, IndexError):  # what the parser raises on nonsense
        valid = False
    if not valid:
        raise ValueError("the recipient is not exactly one valid address")
    message["Subject"] = subject
    # The time it was queued, as RFC 5322 asks ("ready to enter the mail delivery system").
    message["Date"] = format_datetime(created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC))
    # Derived from the row, so a retry of a message the server took already carries the same id.
    domain = message["From"].addresses[0].domain
    message["Message-ID"] = f"<{mail_id}@{domain}>"
    message.set_content(text, charset="utf-8")
    return message


def links_in(text: str) -> list[str]:
    return LINK.findall(text)
