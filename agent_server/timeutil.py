"""Clock readings as the tables store them (aware UTC; SQLModel refuses naive datetimes) and as
the public JSON shows them (ISO 8601 with ``Z``)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def iso(value: datetime) -> str:
    """``2026-05-18T10:00:00Z``; a naive value (SQLite without offsets) is taken as UTC."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
