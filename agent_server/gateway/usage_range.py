"""The one reading of a usage period (``start`` and ``end`` days), for ``GET /admin/usage`` and the
dashboard's ``/app/usage``: both answer a bad day with 400 naming the parameter, never with a 500.

A period runs from the midnight (UTC) that starts its first day to the midnight that ends its last,
so its last day must have a following one: days are between ``EARLIEST`` (the Unix epoch, before
which nothing was recorded) and ``LATEST`` (the day before the calendar's last).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from agent_server.foundation.errors import ValidationFailed

EARLIEST = date(1970, 1, 1)
LATEST = date.max - timedelta(days=1)  # 9999-12-30: the period ends at the next midnight


@dataclass(frozen=True, slots=True)
class UsagePeriod:
    """UTC days, both included; ``None``: open on that side."""

    start: date | None
    end: date | None

    def since(self) -> datetime | None:
        return None if self.start is None else datetime.combine(self.start, time(), UTC)

    def until(self) -> datetime | None:
        """The midnight after the last day (exclusive)."""
        return None if self.end is None else datetime.combine(self.end + timedelta(days=1), time(), UTC)

    def days(self) -> int | None:
        if self.start is None or self.end is None:
            return None
        return (self.end - self.start).days + 1


def _within(value: date | None, param: str) -> None:
    if value is not None and not EARLIEST <= value <= LATEST:
        raise ValidationFailed(f"{param} must be a day from {EARLIEST} to {LATEST}.", param=param)


def usage_period(
    start: date | None,
    end: date | None,
    *,
    today: date | None = None,
    default_days: int | None = None,
    max_days: int | None = None,
) -> UsagePeriod:
    """The period of ``start`` and ``end`` as sent. With ``default_days`` (the dashboard), a missing end
    is ``today`` and a missing start that many days before it (never before ``EARLIEST``); with
    ``max_days``, a longer period is refused."""
    _within(start, "start")
    _within(end, "end")
    if default_days is not None:
        if today is None:
            raise ValueError("default_days needs today")
        end = end or min(today, LATEST)
        start = start or max(EARLIEST, end - timedelta(days=default_days - 1))
    if start is not None and end is not None and start > end:
        raise ValidationFailed(f"start ({start}) must be on or before end ({end}).", param="start")
    period = UsagePeriod(start, end)
    if max_days is not None and (period.days() or 0) > max_days:
        raise ValidationFailed(
            f"start ({start}) must be at most {max_days - 1} days before end ({end}): a period spans at "
            f"most {max_days} days.",
            param="start",
        )
    return period
