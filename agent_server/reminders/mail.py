"""The text of a deprecation reminder: which version, until when, what to move to, and which keys."""

from __future__ import annotations

from typing import NamedTuple

from agent_server.mail.outbox import Mail
from agent_server.policies.versions import ApiVersion, http_date
from agent_server.reminders.schedule import FINAL

KIND = "version_reminder"


class KeyUse(NamedTuple):
    """A key that pinned the version: its name and redacted form (prefix and last four characters)."""

    name: str
    redacted: str
    revoked: bool


def reminder_mail(
    to: str, milestone: str, version: ApiVersion, tenant_name: str, keys: list[KeyUse], guide_url: str
) -> Mail:
    sunset = version.sunset_at
    day = sunset.date().isoformat() if sunset else "a date still to be announced"
    retires = f"on {day} ({http_date(sunset.timestamp())})" if sunset else f"on {day}"
    if milestone == FINAL:
        subject = f"Final notice: API version {version.name} retires on {day}"
        opening = "This is the final reminder before the retirement."
    else:
        subject = f"API version {version.name} retires on {day}: move to {version.successor}"
        opening = "This is the 6-month reminder of a deprecated API version."
    listed = [f"  - {key.name} ({key.redacted}){' (revoked)' if key.revoked else ''}" for key in keys]
    text = "\n".join(
        [
            "Hello,",
            "",
            opening,
            "",
            f"Requests of {tenant_name} pinned API-Version: {version.name} in the last 30 days. "
            f"That version is deprecated and will be retired {retires}; after that, requests pinning "
            "it are answered with 410 Gone.",
            "",
            f"Move to API-Version: {version.successor} (or send no API-Version header for the current "
            "version).",
            f"Migration guide: {guide_url}",
            "",
            f"Keys that used {version.name} in the last 30 days:",
            *listed,
            "",
            f"You receive this message because you administer {tenant_name}.",
        ]
    )
    return Mail(to=to, subject=subject, text=text, kind=KIND)
