"""Clock readings as the tables store them (aware UTC; SQLModel refuses naive datetimes) and as
the public JSON shows them (ISO 8601 with ``Z``)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def month_bounds(timestamp: float) -> tuple[datetime, datetime]:
    """The start of the calendar month (UTC) of ``timestamp``, and of the next month."""
    start = utc(timestamp).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if start.month == 12:
        return start, start.replace(year=start.year + 1, month=1)
    return start, start.replace(month=start.month + 1)


def iso(value: datetime) -> str:
    """``2026-05-18T10:00:00Z``; a naive value (SQLite without offsets) is taken as UTC."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
