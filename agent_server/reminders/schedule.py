"""When a deprecated version's reminders are due (spec 9): month 6 after the deprecation, and the
final notice in the last 30 days before the sunset (month 11). Pure: time comes in as epoch seconds."""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta
from typing import Literal, NamedTuple

from agent_server.policies.versions import FINAL_NOTICE_SECONDS, ApiVersion

MONTH_6: Literal["month_6"] = "month_6"
FINAL: Literal["final"] = "final"
REMINDER_MONTHS = 6


class Milestone(NamedTuple):
    name: Literal["month_6", "final"]
    due_at: datetime


def add_months(moment: datetime, months: int) -> datetime:
    """Calendar months; the day is clamped to the target month (31 August + 6 months = 28 February)."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def due_milestone(version: ApiVersion, now: float) -> Milestone | None:
    """The latest reminder due for ``version`` at ``now``; None before month 6 and after the sunset.

    Only the latest: a tenant that starts pinning the version in its last month gets the final
    notice, not both.
    """
    if version.state(now) != "deprecated":
        return None
    if version.sunset_at is not None:
        final = version.sunset_at - timedelta(seconds=FINAL_NOTICE_SECONDS)
        if now >= final.timestamp():
            return Milestone(FINAL, final)
    if version.deprecated_at is not None:
        month_6 = add_months(version.deprecated_at, REMINDER_MONTHS)
        if now >= month_6.timestamp():
            return Milestone(MONTH_6, month_6)
    return None
